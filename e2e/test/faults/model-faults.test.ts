import { ErrorBody } from '@fin/contracts';
import { hangingReply, textReply, toolNames, type Faults, type Reply } from '@fin/fakes';
import { createTestDatabase, openEventStream, waitFor, type SseFrame, type TestDatabase } from '@fin/testing';
import pg from 'pg';
import { postNews } from '../../src/load';
import { bySize, jobLedger, keptPromises, reportSurvival, settleJobs, startFaultSystem, type FaultSystem } from '../../src/reliability';
import { marker, newRun, scriptedModel, type ScriptedModel } from '../../src/scripted-model';
import { UPSTREAM_MODES, type System } from '../../src/system';

/** Repetitions of every (fault, product) case. */
const REPEAT = bySize({ ci: 2, full: 10 });
const SETTLE_MS = bySize({ ci: 120_000, full: 300_000 });
/** Hang guard of one stream: a stream still open by then has hung. */
const STREAM_GUARD_MS = 60_000;

type Fault = 'overloaded mid-stream' | 'timeout' | 'malformed JSON on the wire' | 'answer that is not the JSON asked for';
const FAULTS: readonly Fault[] = [
  'overloaded mid-stream',
  'timeout',
  'malformed JSON on the wire',
  'answer that is not the JSON asked for',
];

/** The documented outcome of a fault that lasts (docs/products.md, docs/jobs.md): the error type clients read. */
const EXPECTED: Record<'job' | 'analysis stream' | 'chat stream', Partial<Record<Fault, string>>> = {
  // Retried while attempts remain (3), then failed with a reason.
  job: {
    'overloaded mid-stream': 'service_unavailable',
    timeout: 'service_unavailable',
    'malformed JSON on the wire': 'service_unavailable',
    'answer that is not the JSON asked for': 'internal_error',
  },
  // One attempt: the stream's last event is `error`, and its job failed with the same type.
  'analysis stream': {
    'overloaded mid-stream': 'service_unavailable',
    timeout: 'service_unavailable',
    'malformed JSON on the wire': 'service_unavailable',
    'answer that is not the JSON asked for': 'internal_error',
  },
  // Chat is not a job: the reply ends with `error` and is stored as failed.
  'chat stream': {
    'overloaded mid-stream': 'service_unavailable',
    timeout: 'gateway_timeout',
    'malformed JSON on the wire': 'bad_gateway',
  },
};

function faulty(faults: Faults): (reply: Reply) => Reply {
  return (reply) => ({ ...reply, faults: { ...reply.faults, ...faults } });
}

/**
 * The model misbehaves: an `overloaded_error` in the middle of a streamed answer (after a 200), no answer at all
 * (the SDK's timeout, AI_TIMEOUT_MS = 1 s here), a stream whose data is not JSON, and an answer that is not
 * the JSON the product asked for (even after the repair round). Jobs retry a passing fault and fail with the
 * documented reason when it lasts; streams end with an `error` event; nothing hangs.
 */
describe.each(UPSTREAM_MODES)('fault: the model fails (%s upstream)', (upstream) => {
  let db: TestDatabase;
  let model: ScriptedModel;
  let fault: FaultSystem | undefined;
  let system: System;
  let key: string;
  let client: pg.Client;
  let attempts: pg.Pool;
  /** What each marked request gets: a fault, on every attempt (`lasting`) or on the first only. */
  const plans = new Map<string, { fault: Fault; lasting: boolean }>();

  beforeAll(async () => {
    db = await createTestDatabase();
    model = scriptedModel();
    fault = await startFaultSystem({
      databaseUrl: db.url,
      tenant: 'faults',
      model: model.handler,
      env: { AI_TIMEOUT_MS: '1000' },
      system: { products: ['news', 'analysis', 'chat'], upstream },
    });
    ({ system, key } = fault);
    client = new pg.Client(db.url);
    await client.connect();
    attempts = new pg.Pool({ connectionString: db.url, max: 4 });
    model.setHook(async (turn, request) => {
      const plan = turn.marker === undefined ? undefined : plans.get(turn.marker);
      if (!plan) return undefined;
      if (!plan.lasting) {
        // A passing fault: only the job's first attempt meets it.
        const { rows } = await attempts.query<{ attempts: number }>("SELECT attempts FROM jobs WHERE request->'data'->>'marker' = $1", [
          turn.marker,
        ]);
        if ((rows[0]?.attempts ?? 1) > 1) return undefined;
      }
      switch (plan.fault) {
        case 'overloaded mid-stream':
          return faulty({ failMidStream: { afterEvents: 2, error: { type: 'overloaded_error' } } });
        case 'timeout':
          return hangingReply();
        case 'malformed JSON on the wire':
          return faulty({ malformedJson: true });
        case 'answer that is not the JSON asked for': {
          // Every answer is prose, the repair round's too; only the turn that asks for market data is left alone.
          const asksForData = !turn.answer && toolNames(request.body).includes('market_data') && request.body.tool_choice?.type !== 'none';
          return asksForData ? undefined : textReply('Markets were mixed today; here is my summary in prose rather than JSON.');
        }
      }
    });
  }, 120_000);

  afterAll(async () => {
    await fault?.stop();
    await client?.end();
    await attempts?.end();
    await db?.drop();
  });

  /** Reads a stream to its end, or fails if it is still open after the hang guard. */
  async function readAll(stream: Awaited<ReturnType<typeof openEventStream>>): Promise<SseFrame[]> {
    let timer: NodeJS.Timeout | undefined;
    const guard = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        stream.close();
        reject(new Error(`the stream was still open after ${STREAM_GUARD_MS} ms`));
      }, STREAM_GUARD_MS);
    });
    try {
      return await Promise.race([stream.rest(), guard]);
    } finally {
      clearTimeout(timer);
    }
  }

  it(`retries a passing fault and fails a lasting one with its reason, for jobs (${REPEAT} of each)`, async () => {
    const run = newRun();
    const cases: { id: string; fault: Fault; lasting: boolean }[] = [];
    let index = 0;
    for (const fault of FAULTS) {
      for (const lasting of [false, true]) {
        for (let repeat = 0; repeat < REPEAT; repeat++) {
          const mark = marker(run, index++);
          plans.set(mark, { fault, lasting });
          const res = await postNews(system.gatewayUrl, key, { symbols: ['AAPL'], n: 2, data: { marker: mark } });
          expect(res.status).toBe(202);
          cases.push({ id: ((await res.json()) as { job_id: string }).job_id, fault, lasting });
        }
      }
    }
    const ids = cases.map((entry) => entry.id);
    const outcomes = await settleJobs(client, ids, { timeoutMs: SETTLE_MS });
    const ledger = await jobLedger(client, ids);
    // A passing fault costs one attempt and the job completes; a lasting one uses all 3 and fails with its reason.
    const wrong = cases.flatMap(({ id, fault, lasting }) => {
      const job = ledger.get(id);
      const expected = lasting
        ? { status: 'failed', type: EXPECTED.job[fault], attempts: 3 }
        : { status: 'completed', type: undefined, attempts: 2 };
      const got = { status: job?.status, type: job?.error?.type, attempts: job?.attempts };
      return keptPromises(job) && JSON.stringify(got) === JSON.stringify(expected)
        ? []
        : [`${id} ${fault} (${lasting ? 'lasting' : 'passing'}): expected ${JSON.stringify(expected)}, got ${JSON.stringify(got)}`];
    });
    const retried = cases.filter((entry) => !entry.lasting && ledger.get(entry.id)?.status === 'completed').length;
    const failed = cases.filter((entry) => entry.lasting && ledger.get(entry.id)?.status === 'failed').length;
    reportSurvival({
      scenario: `model faults in jobs (529 mid-stream, timeout, malformed JSON, invalid answer), ${upstream} upstream`,
      n: ids.length,
      survived: ids.length - wrong.length,
      lost: outcomes.lost,
      details: { 'passing faults retried to completion': retried, 'lasting faults failed with the documented reason': failed },
      problems: [...wrong, ...outcomes.problems],
    });
  }, 300_000);

  it(`ends streamed analyses and chats with an error event, never a hang (${REPEAT} of each)`, async () => {
    const run = newRun();
    let index = 0;
    const wrong: string[] = [];
    let ended = 0;
    const analysis = async (fault: Fault) => {
      const mark = marker(run, index++);
      plans.set(mark, { fault, lasting: true });
      const format =
        fault === 'answer that is not the JSON asked for'
          ? { type: 'json_schema', schema: { summary: 'string' }, stream: true }
          : { type: 'markdown', stream: true };
      const stream = await openEventStream(`${system.gatewayUrl}/api/analysis`, {
        headers: { 'X-API-Key': key },
        body: { prompt: `How exposed is Apple to rates? (case ${mark})`, symbols: ['AAPL'], output_format: format },
      });
      const frames = await readAll(stream);
      const jobId = /\/api\/jobs\/analysis\/([0-9a-f-]{36})\/status/.exec(String(stream.headers.location))?.[1];
      const last = frames.at(-1);
      const error = last?.event === 'error' ? ErrorBody.parse(last.data) : undefined;
      // The job's failure travels as an event to the job-status service, which records it a moment later.
      const job = await waitFor(
        async () => {
          const { rows } = await client.query<{ status: string; error: { type: string } | null }>(
            'SELECT status, error FROM jobs WHERE id = $1',
            [jobId],
          );
          return (rows[0]?.status === 'failed' || rows[0]?.status === 'completed') && rows[0];
        },
        { timeoutMs: 30_000, what: `analysis job ${jobId} to be recorded as finished` },
      ).catch(() => undefined);
      const expected = EXPECTED['analysis stream'][fault];
      if (error?.type !== expected || job?.status !== 'failed' || job.error?.type !== expected) {
        wrong.push(`analysis, ${fault}: last event ${JSON.stringify(last)}, job ${JSON.stringify(job)}`);
      }
      ended += 1;
    };
    const chat = async (fault: Fault) => {
      const mark = marker(run, index++);
      plans.set(mark, { fault, lasting: true });
      const stream = await openEventStream(`${system.gatewayUrl}/api/chat`, {
        headers: { 'X-API-Key': key },
        body: { message: `What is a dividend? (case ${mark})`, conversation_id: null },
      });
      const frames = await readAll(stream);
      const last = frames.at(-1);
      const error = last?.event === 'error' ? ErrorBody.parse(last.data) : undefined;
      const replyId = frames.find((frame) => frame.id !== undefined)?.id?.split(':')[0];
      const { rows } = await client.query<{ status: string; error: { type: string } | null }>(
        'SELECT status, error FROM messages WHERE id = $1',
        [replyId],
      );
      const expected = EXPECTED['chat stream'][fault];
      if (error?.type !== expected || rows[0]?.status !== 'failed' || rows[0]?.error?.type !== expected) {
        wrong.push(`chat, ${fault}: last event ${JSON.stringify(last)}, reply ${JSON.stringify(rows[0])}`);
      }
      ended += 1;
    };
    const work: (() => Promise<void>)[] = [];
    for (let repeat = 0; repeat < REPEAT; repeat++) {
      for (const fault of FAULTS) {
        work.push(() => analysis(fault));
        if (EXPECTED['chat stream'][fault]) work.push(() => chat(fault));
      }
    }
    const total = work.length;
    // At most 8 at a time: a key has 10 concurrent chat streams.
    for (let start = 0; start < work.length; start += 8) await Promise.all(work.slice(start, start + 8).map((run) => run()));
    reportSurvival({
      scenario: `model faults in streamed analysis and chat, ${upstream} upstream`,
      unit: 'streams',
      n: total,
      survived: ended - wrong.length,
      lost: total - ended,
      details: { 'ended with the documented error event': ended - wrong.length },
      problems: wrong,
    });
  }, 300_000);
});
