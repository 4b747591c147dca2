// The model table (models.ts, model-settings.ts) against the stand-in of the Messages API, which enforces
// Anthropic's documented per-model rules as a separate reading (@fin/offline model-rules.ts, thinking.ts): every
// product's requests, built by the engine for every model of the table and every thinking setting and effort
// the table accepts, pass the fake; every combination the table refuses, the fake refuses too; and the
// configuration refuses at start what the configured model would refuse at the first request.
import Anthropic, { APIError } from '@anthropic-ai/sdk';
import type { MessageCreateParamsNonStreaming } from '@anthropic-ai/sdk/resources/messages/messages';
import { ConfigError, parseConfig } from '@fin/config';
import { AnalysisRequest, NewsRequest, StockReportRequest } from '@fin/contracts';
import {
  minimumCacheableTokens,
  startFakeAnthropic,
  text,
  textReply,
  type FakeAnthropic,
  type MessagesRequestBody,
  type RecordedRequest,
  type ReplyHandler,
} from '@fin/fakes';
import { API_MODELS, apiModel, checkMessagesBody, offlineAnalyst } from '@fin/offline';
import { aiConfigShape, createAiEngine, type AiEngine } from '../src';
import { SampleMarketDataProvider } from '../src/market-data';
import { modelProfile, requestSettings, settingProblem, THINKING_SETTINGS, type ThinkingSetting } from '../src/model-settings';
import { EFFORT_LEVELS, MODELS, type Effort, type ModelProfile } from '../src/models';
import { drain, silentLogger } from './helpers';

const MAX_OUTPUT_TOKENS = 8_192;
const PREAMBLE = 'Let me look up the latest figures first.';

interface Combination {
  setting: ThinkingSetting;
  effort: Effort | undefined;
}

/** Every thinking setting with every effort (none, then each level). */
const COMBINATIONS: Combination[] = THINKING_SETTINGS.flatMap((setting) =>
  [undefined, ...EFFORT_LEVELS].map((effort) => ({ setting, effort })),
);

const label = ({ setting, effort }: Combination) => `${setting}${effort ? `+${effort}` : ''}`;

function acceptedBy(profile: ModelProfile, combination: Combination): boolean {
  return settingProblem({ ...profile, unknown: false }, combination.setting, combination.effort, MAX_OUTPUT_TOKENS) === undefined;
}

/**
 * The offline analyst (which answers every product, calling market_data first), writing a sentence before each
 * tool call: on Claude Sonnet 5.5 and Opus 5.5 that sentence comes back as a thinking block, which the engine
 * must pass back unchanged in the next round.
 */
function analystWithPreamble(): ReplyHandler {
  const analyst = offlineAnalyst();
  return async (request, context) => {
    const reply = await analyst(request, context);
    const callsTools = reply.content.some((block) => block.type === 'tool_use');
    return callsTools ? { ...reply, content: [text(PREAMBLE), ...reply.content] } : reply;
  };
}

function engineEnv(model: string, { setting, effort }: Combination, fakeUrl: string): Record<string, string> {
  const env: Record<string, string> = {
    ANTHROPIC_API_KEY: 'sk-ant-test-0000000000',
    ANTHROPIC_BASE_URL: fakeUrl,
    AI_MAX_RETRIES: '0',
    AI_MODEL: model,
    AI_NEWS_MODEL: model,
    AI_WEB_SEARCH: 'true',
    AI_MAX_OUTPUT_TOKENS: String(MAX_OUTPUT_TOKENS),
  };
  for (const product of ['NEWS', 'STOCK_REPORT', 'ANALYSIS', 'CHAT']) {
    env[`AI_${product}_THINKING`] = setting;
    if (effort) env[`AI_${product}_EFFORT`] = effort;
  }
  return env;
}

const PRODUCTS: Record<string, (engine: AiEngine) => Promise<unknown>> = {
  news: (engine) => engine.news(NewsRequest.parse({ symbols: ['AAPL'], n: 2 })),
  'stock report': (engine) => engine.stockReport(StockReportRequest.parse({ symbols: ['AAPL'] })),
  'analysis markdown': (engine) => engine.analysis(AnalysisRequest.parse({ prompt: 'How is Apple doing?', symbols: ['AAPL'] })),
  'analysis markdown streamed': async (engine) => {
    const items = await drain(
      engine.analysisStream(AnalysisRequest.parse({ prompt: 'How is Apple doing?', symbols: ['AAPL'], output_format: { stream: true } })),
    );
    const last = items.at(-1);
    if (last?.kind !== 'result') throw new Error(`the stream ended without a result: ${JSON.stringify(last)}`);
    return last.result;
  },
  'analysis json': (engine) =>
    engine.analysis(AnalysisRequest.parse({ prompt: 'How is Apple doing?', symbols: ['AAPL'], output_format: { type: 'json' } })),
  'analysis json_schema': (engine) =>
    engine.analysis(
      AnalysisRequest.parse({
        prompt: 'How is Apple doing?',
        symbols: ['AAPL'],
        output_format: { type: 'json_schema', schema: { summary: 'string', risk_score: 'number' } },
      }),
    ),
  'chat with a tool round': async (engine) => {
    const items = await drain(engine.chat({ history: [], message: 'What does AAPL trade at?' }));
    const last = items.at(-1);
    if (last?.kind !== 'result') throw new Error(`the chat ended without a reply: ${JSON.stringify(last)}`);
    return last.result;
  },
};

/** Whether a request passes back a thinking block in an earlier assistant turn. */
const passesBackThinking = (body: MessagesRequestBody | undefined) =>
  (body?.messages ?? []).some(
    (entry) => entry.role === 'assistant' && typeof entry.content !== 'string' && entry.content.some((block) => block.type === 'thinking'),
  );

const refusedRequests = (requests: readonly RecordedRequest[]) =>
  requests.filter((request) => request.answeredBy === 'validation' || request.answeredBy === 'unscripted');

describe.each(MODELS.map((profile) => [profile.id, profile] as const))('every product on %s', (model, profile) => {
  let fake: FakeAnthropic;
  beforeAll(async () => {
    fake = await startFakeAnthropic({ handler: analystWithPreamble() });
  });
  afterAll(() => fake.close());

  const accepted = COMBINATIONS.filter((combination) => acceptedBy(profile, combination));

  it('has settings the table accepts (off at least)', () => {
    expect(accepted.map(label)).toContain('off');
  });

  it.each(accepted.map((combination) => [label(combination), combination] as const))(
    'thinking %s: every request passes the fake and every product succeeds',
    async (_, combination) => {
      fake.reset();
      const config = parseConfig(aiConfigShape, engineEnv(model, combination, fake.url));
      const engine = await createAiEngine({ config, logger: silentLogger, marketData: new SampleMarketDataProvider() });
      const failures: string[] = [];
      try {
        for (const [product, run] of Object.entries(PRODUCTS)) {
          const from = fake.requests.length;
          try {
            await run(engine);
          } catch (error) {
            failures.push(`${product}: ${error instanceof Error ? error.message : String(error)}`);
          }
          const sent = fake.requests.slice(from);
          for (const request of refusedRequests(sent)) failures.push(`${product}: request #${request.index} was refused`);
          if (sent.length < 2) failures.push(`${product}: ${sent.length} request(s), expected a tool round and an answer`);
          if (profile.betweenToolTextAsThinking && !sent.some((request) => passesBackThinking(request.body))) {
            failures.push(`${product}: no request passed a thinking block back`);
          }
        }
      } finally {
        await engine.close();
      }
      expect(failures).toEqual([]);
      const settings = requestSettings(profile, combination.setting, combination.effort);
      for (const request of fake.requests) {
        expect(request.body?.thinking).toEqual(settings.thinking);
        expect((request.body?.output_config as { effort?: string } | undefined)?.effort).toEqual(settings.effort);
      }
    },
  );
});

describe('the model table and the rules the fake enforces agree', () => {
  let fake: FakeAnthropic;
  let client: Anthropic;
  beforeAll(async () => {
    fake = await startFakeAnthropic({ handler: () => textReply('Noted.') });
    // An explicit timeout: without one the SDK itself refuses a non-streamed request with a large max_tokens.
    client = new Anthropic({ apiKey: 'sk-ant-test-0000000000', baseURL: fake.url, maxRetries: 0, logLevel: 'off', timeout: 30_000 });
  });
  afterAll(() => fake.close());
  beforeEach(() => fake.reset());

  /** Whether the fake accepts `body`; a refusal other than the API's 400 or 404 fails the test. */
  async function fakeAccepts(body: Record<string, unknown>): Promise<boolean> {
    try {
      await client.messages.create(body as unknown as MessageCreateParamsNonStreaming);
      return true;
    } catch (error) {
      if (error instanceof APIError && (error.status === 400 || error.status === 404)) return false;
      throw error;
    }
  }

  const ask = (model: string, extra: Record<string, unknown> = {}) => ({
    model,
    max_tokens: MAX_OUTPUT_TOKENS,
    messages: [{ role: 'user', content: 'Hello' }],
    ...extra,
  });

  const withSettings = (profile: ModelProfile, combination: Combination) => {
    const { thinking, effort } = requestSettings(profile, combination.setting, combination.effort);
    return ask(profile.id, { ...(thinking ? { thinking } : {}), ...(effort ? { output_config: { effort } } : {}) });
  };

  it.each(MODELS.map((profile) => [profile.id, profile] as const))(
    '%s: the fake accepts exactly the thinking settings and efforts settingProblem accepts',
    async (_, profile) => {
      const disagreements: string[] = [];
      for (const combination of COMBINATIONS) {
        const table = acceptedBy(profile, combination);
        const api = await fakeAccepts(withSettings(profile, combination));
        if (table !== api)
          disagreements.push(`${label(combination)}: table ${table ? 'accepts' : 'refuses'}, fake ${api ? 'accepts' : 'refuses'}`);
      }
      expect(disagreements).toEqual([]);
    },
  );

  it.each(MODELS.map((profile) => [profile.id, profile] as const))(
    '%s: output limit, forced tool choice, sampling, prefill and web search versions agree',
    async (_, profile) => {
      const lowest = withSettings(profile, { setting: 'off', effort: undefined });
      const unknownProfile = { ...profile, unknown: false };
      expect(settingProblem(unknownProfile, 'off', undefined, profile.maxOutputTokens)).toBeUndefined();
      expect(settingProblem(unknownProfile, 'off', undefined, profile.maxOutputTokens + 1)?.about).toBe('max_output_tokens');
      expect(await fakeAccepts({ ...lowest, max_tokens: profile.maxOutputTokens })).toBe(true);
      expect(await fakeAccepts({ ...lowest, max_tokens: profile.maxOutputTokens + 1 })).toBe(false);

      const tool = { name: 'market_data', description: 'Quotes.', input_schema: { type: 'object', properties: {} } };
      // Forced tool use is refused with thinking on on every model; at its lowest setting a model takes it if the table says so.
      const lowestThinking = requestSettings(profile, 'off').thinking;
      const thinksAtLowest = lowestThinking === undefined || lowestThinking.type === 'adaptive';
      const forced = await fakeAccepts({ ...lowest, tools: [tool], tool_choice: { type: 'any' } });
      expect(forced).toBe(profile.forcedToolChoice && !thinksAtLowest);
      expect(await fakeAccepts({ ...lowest, temperature: 0.5 })).toBe(profile.samplingParameters);
      const prefill = [
        { role: 'user', content: 'Give JSON.' },
        { role: 'assistant', content: '{' },
      ];
      expect(await fakeAccepts({ ...lowest, messages: prefill })).toBe(profile.assistantPrefill && !thinksAtLowest);

      const versions = [...new Set(MODELS.flatMap((row) => row.webSearchToolVersions))];
      for (const version of versions) {
        const takes = await fakeAccepts({ ...lowest, tools: [{ type: version, name: 'web_search', max_uses: 1 }] });
        expect({ version, takes }).toEqual({ version, takes: profile.webSearchToolVersions.includes(version) });
      }
      expect(await fakeAccepts({ ...lowest, tools: [{ type: 'web_search_19990101', name: 'web_search' }] })).toBe(false);

      // What a request cannot cheaply show, read side by side.
      const rules = apiModel(profile.id);
      expect(rules).toBeDefined();
      expect({
        aliases: profile.aliases,
        thinking: [...profile.thinking.accepted].sort(),
        thinksWhenOmitted: profile.thinking.whenOmitted === 'adaptive',
        refusedAtEffort: profile.thinking.refusedAtEffort,
        effort: profile.effort?.accepted ?? null,
        contextWindow: profile.contextWindowTokens,
        minCacheableTokens: profile.minCacheablePromptTokens,
        tokenizerRatio: profile.tokenizerRatio,
        boundThinking: profile.thinkingBlocksBound,
        betweenToolTextAsThinking: profile.betweenToolTextAsThinking,
      }).toEqual({
        aliases: rules?.aliases,
        thinking: [...(rules?.thinking ?? [])].sort(),
        thinksWhenOmitted: rules?.thinksWhenOmitted,
        refusedAtEffort: rules?.refusedAtEffort,
        effort: rules?.effort,
        contextWindow: rules?.contextWindow,
        minCacheableTokens: minimumCacheableTokens(profile.id),
        tokenizerRatio: rules?.tokenizerRatio,
        boundThinking: rules?.boundThinking,
        betweenToolTextAsThinking: rules?.betweenToolTextAsThinking,
      });
    },
  );

  it('knows the same models', () => {
    expect(MODELS.map((profile) => profile.id).sort()).toEqual(Object.keys(API_MODELS).sort());
  });
});

describe('settings the configured model refuses are start-up errors naming the variable', () => {
  const base = { ANTHROPIC_API_KEY: 'sk-ant-test-0000000000' };

  function issuesOf(env: Record<string, string>): { variable: string; message: string }[] {
    try {
      parseConfig(aiConfigShape, { ...base, ...env });
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      return (error as ConfigError).issues.map(({ variable, message }) => ({ variable, message }));
    }
    throw new Error(`the configuration was accepted: ${JSON.stringify(env)}`);
  }

  it('refuses between_tools at effort xhigh on Claude Sonnet 5.5, naming AI_CHAT_EFFORT', () => {
    expect(issuesOf({ AI_CHAT_THINKING: 'between_tools', AI_CHAT_EFFORT: 'xhigh' })).toEqual([
      { variable: 'AI_CHAT_EFFORT', message: expect.stringMatching(/between_tools.*xhigh.*use effort high or below/) as unknown },
    ]);
    expect(() => parseConfig(aiConfigShape, { ...base, AI_CHAT_THINKING: 'between_tools', AI_CHAT_EFFORT: 'high' })).not.toThrow();
  });

  it('refuses adaptive thinking for news on Claude Haiku 4.5, naming AI_NEWS_THINKING', () => {
    expect(issuesOf({ AI_NEWS_THINKING: 'adaptive', AI_NEWS_MODEL: 'claude-haiku-4-5' })).toEqual([
      { variable: 'AI_NEWS_THINKING', message: expect.stringContaining('claude-haiku-4-5') as unknown },
    ]);
  });

  it('refuses AI_MAX_OUTPUT_TOKENS over what Claude Haiku 4.5 writes, naming AI_MAX_OUTPUT_TOKENS', () => {
    expect(issuesOf({ AI_MAX_OUTPUT_TOKENS: '64001', AI_NEWS_MODEL: 'claude-haiku-4-5' }).map((issue) => issue.variable)).toEqual([
      'AI_MAX_OUTPUT_TOKENS',
    ]);
    expect(() => parseConfig(aiConfigShape, { ...base, AI_MAX_OUTPUT_TOKENS: '64000', AI_NEWS_MODEL: 'claude-haiku-4-5' })).not.toThrow();
    // The model table decides, not the variable's range: the 5.x models write up to 128,000.
    expect(issuesOf({ AI_MAX_OUTPUT_TOKENS: '64001', AI_NEWS_MODEL: 'claude-haiku-4-5' })[0]?.message).toMatch(/Claude Haiku 4\.5.*64000/);
    expect(() => parseConfig(aiConfigShape, { ...base, AI_MAX_OUTPUT_TOKENS: '128000' })).not.toThrow();
    expect(issuesOf({ AI_MAX_OUTPUT_TOKENS: '128001' }).map((issue) => issue.variable)).toEqual(['AI_MAX_OUTPUT_TOKENS']);
  });

  it('takes an unknown AI_MODEL id and runs it with the conservative profile, whose requests every known model accepts', async () => {
    const fake = await startFakeAnthropic({ handler: analystWithPreamble(), validateRequests: false });
    try {
      const config = parseConfig(aiConfigShape, { ...engineEnv('claude-future-9', { setting: 'off', effort: undefined }, fake.url) });
      expect(config.AI_MODEL).toBe('claude-future-9');
      expect(modelProfile('claude-future-9')).toMatchObject({ unknown: true, effort: null, forcedToolChoice: false });
      const engine = await createAiEngine({ config, logger: silentLogger, marketData: new SampleMarketDataProvider() });
      try {
        for (const run of Object.values(PRODUCTS)) await run(engine);
      } finally {
        await engine.close();
      }
      expect(fake.requests.length).toBeGreaterThan(Object.keys(PRODUCTS).length);
      const refusals: string[] = [];
      for (const request of fake.requests) {
        expect(request.body).toMatchObject({ model: 'claude-future-9' });
        expect(request.body?.thinking).toBeUndefined();
        expect((request.body?.output_config as { effort?: string } | undefined)?.effort).toBeUndefined();
        for (const known of MODELS) {
          const checked = checkMessagesBody({ ...request.body, model: known.id });
          if ('type' in checked) refusals.push(`request #${request.index} on ${known.id}: ${checked.message}`);
        }
      }
      expect(refusals).toEqual([]);
    } finally {
      await fake.close();
    }
  });
});
