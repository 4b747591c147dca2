// `npm run bench` runs every scenario; `npm run bench -- <scenario> [options]` one. Benchmarks print tables,
// they are not tests: the exit status is non-zero only when the figures are invalid (a request failed, a
// server did not start), never because a target was missed. See docs/benchmarks.md.
import { aiCost } from './ai-cost';
import { capacity } from './capacity';
import { cacheHit } from './cache-hit';
import { chatStream } from './chat-stream';
import { crudClient } from './crud-client';
import { gatewayOverhead } from './gateway-overhead';
import { jobPipeline } from './job-pipeline';
import { npmStart } from './npm-start';
import { rateLimitStore } from './rate-limit-store';
import { statusPoll } from './status-poll';
import type { BenchOptions } from './lib/options';
import { USAGE, parseOptions } from './lib/options';
import { note, print } from './lib/output';
import { buildCompiledOutput } from './lib/processes';

interface Scenario {
  description: string;
  run(options: BenchOptions, command: string): Promise<boolean>;
}

const SCENARIOS: Record<string, Scenario> = {
  'ai-cost': {
    description:
      "the products' model calls with prompt caching off and on: tokens by kind, web searches and billed cost per job (targets: input cost on ÷ off)",
    run: aiCost,
  },
  capacity: {
    description:
      "three news workers at the model's pace under the organisation's limits: tenant A floods while B–E send a job a second (targets: B–E's wait, allowance used, 429s, jobs in flight and memory per job)",
    run: capacity,
  },
  'crud-client': {
    description:
      'the Prisma client beside pg with SQL: the per-job customer-tool load (kept in pg), a tool read and an audit write (moved to Prisma)',
    run: crudClient,
  },
  'gateway-overhead': {
    description: 'a cache-hit news request through the gateway vs straight to the service, and an empty express 5 handler',
    run: gatewayOverhead,
  },
  'job-pipeline': {
    description: 'POST → completed visible on the status endpoint (cache misses, 10 jobs/s), and the jobs/s of one news worker',
    run: jobPipeline,
  },
  'cache-hit': {
    description: 'cache-hit news requests through the gateway at fixed rates (target: p99 ≤ 5 ms at 1,000 req/s) and at saturation',
    run: cacheHit,
  },
  'chat-stream': {
    description:
      'time to the first SSE event of a chat reply through the gateway vs direct, and memory per open stream with 2,000 held open',
    run: chatStream,
  },
  'npm-start': {
    description:
      'the whole system in one process as npm start runs it: cache hits, status polls and MCP tool calls at saturation, cache hits at 1,000 req/s',
    run: npmStart,
  },
  'rate-limit-store': {
    description:
      "what counting a request costs the database: the gateway's rate-limit store with many keys at the default limits, and one busy key",
    run: rateLimitStore,
  },
  'status-poll': {
    description: 'job status polls through the gateway and straight to the jobs service at saturation, while 50 jobs/s are created',
    run: statusPoll,
  },
};

async function main(): Promise<number> {
  let parsed: ReturnType<typeof parseOptions>;
  try {
    parsed = parseOptions(process.argv.slice(2));
  } catch (error) {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n\n${USAGE}\n`);
    return 2;
  }
  const { scenarios, options, help } = parsed;
  if (help) {
    print(USAGE);
    print();
    print('scenarios:');
    for (const [name, scenario] of Object.entries(SCENARIOS)) print(`  ${name.padEnd(20)} ${scenario.description}`);
    return 0;
  }
  const unknown = scenarios.filter((name) => !(name in SCENARIOS));
  if (unknown.length > 0) {
    process.stderr.write(`unknown scenario ${unknown.join(', ')}; the scenarios are: ${Object.keys(SCENARIOS).join(', ')}\n`);
    return 2;
  }
  const chosen = scenarios.length > 0 ? scenarios : Object.keys(SCENARIOS);
  const args = process.argv.slice(2);
  const command = `npm run bench${args.length > 0 ? ` -- ${args.join(' ')}` : ''}`;
  buildCompiledOutput();
  let ok = true;
  for (const name of chosen) {
    const scenario = SCENARIOS[name];
    if (scenario === undefined) continue;
    try {
      ok = (await scenario.run(options, command)) && ok;
    } catch (error) {
      note(`${name} failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
      ok = false;
    }
  }
  return ok ? 0 : 1;
}

void main().then((code) => {
  process.exitCode = code;
});
