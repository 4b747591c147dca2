import { ChatDoneEvent, CustomerTool } from '@fin/contracts';
import { startFakeCustomerApi, testCertificate, type FakeCustomerApi } from '@fin/customer-tools/testing';
import { message, toolResults, toolUse } from '@fin/fakes';
import { createTestDatabase, openEventStream, type SseFrame, type TestDatabase } from '@fin/testing';
import pg from 'pg';
import { postNews } from '../../src/load';
import { bySize, jobLedger, keptPromises, reportSurvival, settleJobs, startFaultSystem, type FaultSystem } from '../../src/reliability';
import { marker, newRun, scriptedModel, type ScriptedModel } from '../../src/scripted-model';
import { UPSTREAM_MODES, type System } from '../../src/system';

const REPEAT = bySize({ ci: 3, full: 15 });
const SETTLE_MS = bySize({ ci: 60_000, full: 180_000 });
const STREAM_GUARD_MS = 60_000;
/** The hanging tool's own limit, and the news job's: a hang that were not cut off would fail the job. */
const TOOL_TIMEOUT_MS = 1_000;
const NEWS_TIME_LIMIT_MS = 10_000;
/** The executor's cap on a response (CUSTOMER_TOOLS_MAX_RESPONSE_BYTES default, 1 MiB). */
const RESPONSE_CAP = 1024 * 1024;

const TOOLS = {
  hangs: { name: 'slow_positions', path: '/hang', outcome: 'timeout', timeout: TOOL_TIMEOUT_MS },
  'returns 10 MB': { name: 'huge_positions', path: '/huge?mb=10', outcome: 'response_too_large', timeout: 10_000 },
} as const;
type Misbehaviour = keyof typeof TOOLS;

/**
 * A tenant's customer tool misbehaves: one never answers, one answers 10 MB. The model calls it from news jobs
 * (worker processes) and from chat; the call is cut off (time limit, size cap), the model gets a short error
 * (`<name> failed.`), the run goes on and finishes within its own time limit, and the audit records the call.
 */
describe.each(UPSTREAM_MODES)('fault: a customer tool that hangs or answers 10 MB (%s upstream)', (upstream) => {
  let db: TestDatabase;
  let api: FakeCustomerApi;
  let model: ScriptedModel;
  let fault: FaultSystem | undefined;
  let system: System;
  let key: string;
  let client: pg.Client;
  /** Which tool each marked run calls, and what the model got back from it. */
  const plans = new Map<string, Misbehaviour>();
  const seen = new Map<string, { text: string; isError: boolean }>();

  beforeAll(async () => {
    db = await createTestDatabase();
    api = await startFakeCustomerApi();
    model = scriptedModel();
    // The first turn calls the run's customer tool (and market data, as the analyst would); the analyst answers.
    model.setHook((turn, request) => {
      const misbehaviour = turn.marker === undefined ? undefined : plans.get(turn.marker);
      if (!misbehaviour) return undefined;
      const name = TOOLS[misbehaviour].name;
      if (turn.call === 1) {
        const calls = [toolUse(name, { account: 'A-1' })];
        if (
          request.body.tools?.some((tool) => tool.name === 'market_data') &&
          request.body.system !== undefined &&
          /news desk/.test(JSON.stringify(request.body.system))
        ) {
          calls.push(toolUse('market_data', { symbol: 'AAPL', kind: 'news' }));
        }
        return message(calls);
      }
      const result = toolResults(request.body).find((entry) => entry.toolName === name);
      if (result && turn.marker) seen.set(turn.marker, { text: result.text, isError: result.isError });
      return undefined;
    });
    // The fake customer API lives on 127.0.0.1 with a self-signed certificate: test configuration only.
    const toolEnv = { CUSTOMER_TOOLS_ALLOW_LOOPBACK: 'true', NODE_EXTRA_CA_CERTS: (await testCertificate()).certFile };
    fault = await startFaultSystem({
      databaseUrl: db.url,
      tenant: 'tools',
      model: model.handler,
      system: {
        upstream,
        products: ['portal', 'news', 'chat'],
        productEnv: { news: { ...toolEnv, NEWS_TIME_LIMIT_MS: String(NEWS_TIME_LIMIT_MS) }, chat: toolEnv },
      },
    });
    ({ system, key } = fault);
    client = new pg.Client(db.url);
    await client.connect();
    for (const tool of Object.values(TOOLS)) {
      const res = await fetch(`${system.gatewayUrl}/api/customer-tools/`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-API-Key': key },
        body: JSON.stringify({
          name: tool.name,
          description: 'Positions of a client account.',
          endpoint: `${api.url}${tool.path}`,
          input_schema: { type: 'object', properties: { account: { type: 'string' } }, required: ['account'] },
          timeout_ms: tool.timeout,
          products: ['news', 'chat'],
        }),
      });
      expect(res.status).toBe(201);
      CustomerTool.parse(await res.json());
    }
  }, 120_000);

  afterAll(async () => {
    await fault?.stop();
    await client?.end();
    await api?.close();
    await db?.drop();
  });

  /** The audit rows of one run (a job or a conversation). */
  async function audited(column: 'job_id' | 'conversation_id', id: string | undefined) {
    const { rows } = await client.query<{ tool_name: string; outcome: string; response_bytes: number; duration_ms: number }>(
      `SELECT tool_name, outcome, response_bytes, duration_ms FROM customer_tool_calls WHERE ${column} = $1`,
      [id],
    );
    return rows;
  }

  /** What is wrong with one run's tool call, or nothing. */
  function check(misbehaviour: Misbehaviour, mark: string, audit: Awaited<ReturnType<typeof audited>>): string[] {
    const tool = TOOLS[misbehaviour];
    const problems: string[] = [];
    const got = seen.get(mark);
    // A short error for the model, as documented: `<name> failed.` — no body, no internals.
    if (!got?.isError || got.text !== `${tool.name} failed.`) problems.push(`the model got ${JSON.stringify(got)}`);
    const call = audit.find((row) => row.tool_name === tool.name);
    if (call?.outcome !== tool.outcome) problems.push(`audit ${JSON.stringify(audit)}`);
    if (misbehaviour === 'returns 10 MB' && call?.response_bytes !== RESPONSE_CAP)
      problems.push(`read ${call?.response_bytes} bytes, expected the cap`);
    return problems;
  }

  it(`goes on with news jobs, within their time limit (${REPEAT} per tool)`, async () => {
    const run = newRun();
    const cases: { id: string; misbehaviour: Misbehaviour; mark: string }[] = [];
    let index = 0;
    for (const misbehaviour of Object.keys(TOOLS) as Misbehaviour[]) {
      for (let repeat = 0; repeat < REPEAT; repeat++) {
        const mark = marker(run, index++);
        plans.set(mark, misbehaviour);
        const res = await postNews(system.gatewayUrl, key, { symbols: ['AAPL'], n: 2, data: { marker: mark } });
        expect(res.status).toBe(202);
        cases.push({ id: ((await res.json()) as { job_id: string }).job_id, misbehaviour, mark });
      }
    }
    const ids = cases.map((entry) => entry.id);
    const outcomes = await settleJobs(client, ids, { timeoutMs: SETTLE_MS });
    const ledger = await jobLedger(client, ids);
    const problems: string[] = [];
    for (const { id, misbehaviour, mark } of cases) {
      const job = ledger.get(id);
      const wrong = check(misbehaviour, mark, await audited('job_id', id));
      // Completed on its first attempt: a hang that were not cut off would have failed it (gateway_timeout).
      if (!keptPromises(job) || job?.status !== 'completed' || job.attempts !== 1) wrong.push(`job ${JSON.stringify(job)}`);
      if (wrong.length > 0) problems.push(`${misbehaviour} in news job ${id}: ${wrong.join('; ')}`);
    }
    reportSurvival({
      scenario: `customer tool hangs or returns 10 MB (news jobs), ${upstream} upstream`,
      n: ids.length,
      survived: ids.length - problems.length,
      lost: outcomes.lost,
      details: Object.fromEntries(
        Object.keys(TOOLS).map((name) => [`tool ${name}`, cases.filter((entry) => entry.misbehaviour === name).length]),
      ),
      problems,
    });
  }, 180_000);

  it(`goes on with chat replies, which end with done (${REPEAT} per tool)`, async () => {
    const run = newRun();
    let index = 0;
    const problems: string[] = [];
    const reply = async (misbehaviour: Misbehaviour) => {
      const mark = marker(run, index++);
      plans.set(mark, misbehaviour);
      const stream = await openEventStream(`${system.gatewayUrl}/api/chat`, {
        headers: { 'X-API-Key': key },
        body: { message: `Summarise account A-1 (case ${mark}).`, conversation_id: null },
      });
      let timer: NodeJS.Timeout | undefined;
      const frames = await Promise.race([
        stream.rest(),
        new Promise<SseFrame[]>((resolve) => {
          timer = setTimeout(() => {
            stream.close();
            resolve([]);
          }, STREAM_GUARD_MS);
        }),
      ]).finally(() => clearTimeout(timer));
      const last = frames.at(-1);
      const wrong: string[] = [];
      const done = last?.event === 'done' ? ChatDoneEvent.safeParse(last.data) : undefined;
      if (!done?.success) wrong.push(`last event ${JSON.stringify(last)}`);
      const name = TOOLS[misbehaviour].name;
      const toolEvents = frames.filter((frame) => (frame.data as { tool?: string }).tool === name).map((frame) => frame.event);
      if (toolEvents.join() !== 'tool_start,tool_end') wrong.push(`tool events ${toolEvents.join()}`);
      wrong.push(...check(misbehaviour, mark, await audited('conversation_id', done?.data?.conversation_id)));
      if (wrong.length > 0) problems.push(`${misbehaviour} in chat: ${wrong.join('; ')}`);
    };
    const work = (Object.keys(TOOLS) as Misbehaviour[]).flatMap((misbehaviour) =>
      Array.from({ length: REPEAT }, () => () => reply(misbehaviour)),
    );
    const total = work.length;
    // At most 8 at a time: a key has 10 concurrent chat streams.
    for (let start = 0; start < work.length; start += 8) await Promise.all(work.slice(start, start + 8).map((next) => next()));
    reportSurvival({
      scenario: `customer tool hangs or returns 10 MB (chat), ${upstream} upstream`,
      unit: 'replies',
      n: total,
      survived: total - problems.length,
      lost: 0,
      problems,
    });
  }, 180_000);
});
