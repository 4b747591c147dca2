// ai-cost: what the products' model calls cost, with prompt caching off and on, side by side. Each product runs N
// jobs through the AI engine (the products' own prompts, tools, breakpoints, repair and citation calls) against
// the fake Messages API, which bills as the API does: prompt caching per API key, tokens by its documented
// approximation, web search results at their size (packages/offline: prompt-cache.ts, tokens.ts). The model is
// the offline analyst made to research like a model with web search (researcher.ts). Jobs run one after another,
// as steady traffic of one product would reach the API within a cache lifetime, after a few that are not counted
// (a running service's engine has learnt which of a product's calls are worth writing to the cache).
//
// Reported per product and mode: model calls, input / cache-write / cache-read / output tokens and web searches
// per job, and the billed cost in USD at the price table of the AI config (AI_PRICES; Anthropic's list prices of
// the date it carries by default). The targets are issue 29's: billed input cost, caching on ÷ off.
import type * as Ai from '@fin/ai';
import type { AiConfig, AiEngine, Usage } from '@fin/ai';
import { parseConfig } from '@fin/config';
import { AnalysisRequest, NewsRequest, StockReportRequest } from '@fin/contracts';
import { SAMPLE_MARKET_DATA, startFakeAnthropic } from '@fin/fakes';
import { createLogger } from '@fin/log';
import { describeMachine, formatMachine } from '../lib/machine';
import type { BenchOptions } from '../lib/options';
import { fixed, note, print, table, thousands } from '../lib/output';
import { compiledModule } from '../lib/processes';
import { researchingAnalyst } from './researcher';

type Product = 'news' | 'stock report' | 'analysis' | 'analysis json_schema' | 'chat, 6th turn' | 'chat, 6th turn searching';

const TARGETS: Record<Product, number | undefined> = {
  news: 1.0,
  'stock report': 0.75,
  analysis: 0.6,
  // A structured answer (output_config.format) and its citation round: measured since issue 34, no target yet.
  'analysis json_schema': undefined,
  'chat, 6th turn': 0.5,
  // Not a target: a turn whose search brings 5,000 tokens the conversation has never seen, which no cache holds.
  'chat, 6th turn searching': undefined,
};

/** Jobs of each product run before the measured ones, not counted. */
const WARMUP_JOBS = 4;

const CHAT_TURNS: readonly [string, ...string[]] = [
  'How is Apple doing?',
  'And its margins?',
  'How does Microsoft compare on margins?',
  'Which of the two is cheaper on earnings?',
  'What is a dividend?',
];
/** The 6th turn, measured: a figures question (market_data), or one that asks for news (a web search too). */
const SIXTH_TURNS: ReadonlyArray<[Product, string]> = [
  ['chat, 6th turn', 'Which of Apple and Microsoft has grown revenue faster?'],
  ['chat, 6th turn searching', 'What is the latest news on Apple and Microsoft?'],
];

interface Totals {
  jobs: number;
  usage: Usage;
  model: string;
}

async function drainChat(engine: AiEngine, history: Array<{ role: 'user' | 'assistant'; content: string }>, message: string) {
  for await (const item of engine.chat({ history, message })) if (item.kind === 'result') return item.result;
  throw new Error('the chat reply ended without a result');
}

/** Every job of a run is a request of its own (a number in its data or words): no two share more than the API would let them. */
let jobNumber = 0;

async function runProducts(
  ai: Pick<typeof Ai, 'addUsage' | 'NO_USAGE'>,
  engine: AiEngine,
  config: AiConfig,
  jobs: number,
): Promise<Record<Product, Totals>> {
  const { addUsage, NO_USAGE: ZERO } = ai;
  const symbols = Object.keys(SAMPLE_MARKET_DATA.symbols);
  const pick = (index: number) => symbols[index % symbols.length] as string;
  const totals: Record<Product, Totals> = {
    news: { jobs: 0, usage: ZERO, model: config.AI_NEWS_MODEL },
    'stock report': { jobs: 0, usage: ZERO, model: config.AI_MODEL },
    analysis: { jobs: 0, usage: ZERO, model: config.AI_MODEL },
    'analysis json_schema': { jobs: 0, usage: ZERO, model: config.AI_MODEL },
    'chat, 6th turn': { jobs: 0, usage: ZERO, model: config.AI_MODEL },
    'chat, 6th turn searching': { jobs: 0, usage: ZERO, model: config.AI_MODEL },
  };
  const count = (product: Product, usage: Usage) => {
    totals[product] = { ...totals[product], jobs: totals[product].jobs + 1, usage: addUsage(totals[product].usage, usage) };
  };
  for (let job = 0; job < jobs; job++) {
    const data = { client_reference: `bench-${++jobNumber}` };
    count('news', (await engine.news(NewsRequest.parse({ symbols: [pick(job), pick(job + 3)], n: 5, data }))).usage);
    const report = StockReportRequest.parse({ symbols: job % 2 === 0 ? [pick(job)] : [pick(job), pick(job + 1)], data });
    count('stock report', (await engine.stockReport(report)).usage);
    const question = `Case ${jobNumber}: how exposed is ${pick(job)} to a slowdown in consumer spending, and what would it mean for its margins?`;
    count('analysis', (await engine.analysis(AnalysisRequest.parse({ prompt: question, symbols: [pick(job)] }))).usage);
    const structured = AnalysisRequest.parse({
      prompt: question,
      symbols: [pick(job)],
      output_format: { type: 'json_schema', schema: { exposure: 'string', margin_impact: 'string', confidence: 'number' } },
    });
    count('analysis json_schema', (await engine.analysis(structured)).usage);
  }
  // Conversations: the 6th turn of each is what is compared (the earlier turns write the prefix it reads).
  for (let conversation = 0; conversation < Math.max(1, Math.ceil(jobs / 4)); conversation++) {
    for (const [product, sixth] of SIXTH_TURNS) {
      const history: Array<{ role: 'user' | 'assistant'; content: string }> = [];
      const opening = `Conversation ${++jobNumber}. `;
      for (const message of [opening + CHAT_TURNS[0], ...CHAT_TURNS.slice(1), sixth]) {
        const outcome = await drainChat(engine, history, message);
        if (message === sixth) count(product, outcome.usage);
        history.push({ role: 'user', content: message }, { role: 'assistant', content: outcome.result.text });
      }
    }
  }
  return totals;
}

function perJob(value: number, jobs: number, digits = 0): string {
  return digits === 0 ? thousands(value / jobs) : fixed(value / jobs, digits);
}

export async function aiCost(options: BenchOptions, command: string): Promise<boolean> {
  // The engine as production runs it: its compiled output (the fake and the stand-in model are the runner's).
  const ai = compiledModule('packages/ai', 'index') as typeof Ai;
  const { aiConfigShape, billedCost, createAiEngine, SampleMarketDataProvider } = ai;
  const jobs = options.jobs ?? (options.quick ? 4 : 20);
  const machine = describeMachine();
  const fake = await startFakeAnthropic({ handler: researchingAnalyst(), recordRequests: false });
  const logger = createLogger({ service: 'bench-ai-cost', level: 'silent' });
  const results: Partial<Record<'off' | 'on', { config: AiConfig; totals: Record<Product, Totals> }>> = {};
  try {
    for (const mode of ['off', 'on'] as const) {
      note(`ai-cost: ${jobs} jobs of each product, prompt caching ${mode}`);
      const config = parseConfig(aiConfigShape, {
        // Each mode has its own key: the fake keeps caches per key, as the API keeps them per organisation.
        ANTHROPIC_API_KEY: `sk-ant-bench-cache-${mode}-000000`,
        ANTHROPIC_BASE_URL: fake.url,
        AI_MAX_RETRIES: '0',
        AI_PROMPT_CACHE: String(mode === 'on'),
        ...(process.env.AI_PRICES ? { AI_PRICES: process.env.AI_PRICES } : {}),
        // The models compared (docs/benchmarks.md: news on Haiku 5.5 against Haiku 4.5).
        ...(process.env.AI_MODEL ? { AI_MODEL: process.env.AI_MODEL } : {}),
        ...(process.env.AI_NEWS_MODEL ? { AI_NEWS_MODEL: process.env.AI_NEWS_MODEL } : {}),
      });
      const engine = await createAiEngine({ config, logger, marketData: new SampleMarketDataProvider() });
      try {
        // A warm engine, as a running service is: it has seen runs of each product (cache-policy.ts learns from
        // them which calls are worth writing) and the API holds the products' shared prefixes.
        await runProducts(ai, engine, config, WARMUP_JOBS);
        results[mode] = { config, totals: await runProducts(ai, engine, config, jobs) };
      } finally {
        await engine.close();
      }
    }
  } finally {
    await fake.close();
  }
  const off = results.off;
  const on = results.on;
  if (!off || !on) return false;

  print(`### ai-cost`);
  print();
  print(`command: ${command}`);
  print(formatMachine(machine));
  print();
  print(
    `Prices (USD per million tokens: input / output / 5-minute cache write / cache read; list prices of the model table as of ${on.config.AI_PRICES.as_of}): ${[
      ...new Set([on.config.AI_MODEL, on.config.AI_NEWS_MODEL]),
    ]
      .map((model) => {
        const price = on.config.AI_PRICES.families.find((family) => model.includes(family.pattern))?.price;
        return price
          ? `${model} $${price.input} / $${price.output} / $${price.cache_write_5m ?? price.input * 1.25} / $${price.cache_read ?? price.input * 0.1}`
          : model;
      })
      .join(
        ', ',
      )}; web search $${on.config.AI_PRICES.web_search_per_thousand} per 1,000. Models: ${on.config.AI_MODEL}, news ${on.config.AI_NEWS_MODEL}.`,
  );
  print();
  const rows: string[][] = [];
  const products = Object.keys(TARGETS) as Product[];
  for (const product of products) {
    for (const [mode, run] of [
      ['off', off],
      ['on', on],
    ] as const) {
      const { jobs: n, usage, model } = run.totals[product];
      const cost = billedCost(run.config.AI_PRICES, model, usage, run.config.AI_PROMPT_CACHE_TTL);
      rows.push([
        product,
        mode,
        String(n),
        perJob(usage.modelCalls, n, 1),
        perJob(usage.inputTokens, n),
        perJob(usage.cacheCreationInputTokens, n),
        perJob(usage.cacheReadInputTokens, n),
        perJob(usage.outputTokens, n),
        perJob(usage.webSearches, n, 1),
        fixed((cost.input / n) * 100, 3),
        fixed((cost.total / n) * 100, 3),
      ]);
    }
  }
  print('#### Per job (a chat row is one 6th turn), caching off and on');
  print();
  print(
    table(
      [
        'product',
        'caching',
        'jobs',
        'model calls',
        'input tokens',
        'cache write',
        'cache read',
        'output tokens',
        'web searches',
        'input ¢',
        'total ¢',
      ],
      rows,
      ['left', 'left'],
    ),
  );
  print();
  print('#### Targets (issue 29): billed input cost, caching on ÷ off');
  print();
  const targetRows = products.map((product) => {
    const cost = (run: typeof on) =>
      billedCost(run.config.AI_PRICES, run.totals[product].model, run.totals[product].usage, run.config.AI_PROMPT_CACHE_TTL);
    const ratio = cost(on).input / cost(off).input;
    const totalRatio = cost(on).total / cost(off).total;
    const target = TARGETS[product];
    const met = target === undefined ? '(no target)' : ratio <= target ? 'yes' : 'NO';
    return [product, target === undefined ? '–' : `≤ ${fixed(target, 2)}`, fixed(ratio, 2), fixed(totalRatio, 2), met];
  });
  print(table(['product', 'target', 'input cost on ÷ off', 'total cost on ÷ off', 'met'], targetRows, ['left']));
  return true;
}
