import { createTestDatabase, waitFor, type TestDatabase } from '@fin/testing';
import pg from 'pg';
import { ownBroker, type OwnBroker } from '../../src/broker';
import { newsRequest, postNews, startLoad } from '../../src/load';
import { bySize, describeOutcomes, reportSurvival, settleJobs, startFaultSystem, type FaultSystem } from '../../src/reliability';
import { newRun, scriptedModel, think } from '../../src/scripted-model';
import { UPSTREAM_MODES, type System, type UpstreamMode } from '../../src/system';

/** Each outage keeps the broker down this long, under load. */
const OUTAGE_MS = 30_000;
const SIZE = bySize({ ci: { outages: 1, rate: 3 }, full: { outages: 3, rate: 6 } });
const SETTLE_MS = bySize({ ci: 180_000, full: 300_000 });

/**
 * The Kafka broker (one of the test's own) is stopped for 30 s while jobs keep arriving, then started again.
 * Requests are accepted throughout (the job and its request event are in Postgres, in the outbox); once the
 * broker is back, every accepted job runs and completes.
 */
/** Through the deployed shape in CI; npm start's one process too at full size (RELIABILITY_SIZE=full). */
const UPSTREAMS = bySize<readonly UpstreamMode[]>({ ci: ['http'], full: UPSTREAM_MODES });

describe.each(UPSTREAMS)('fault: the Kafka broker down for 30 s under load (%s upstream)', (upstream) => {
  let db: TestDatabase;
  let broker: OwnBroker;
  let fault: FaultSystem | undefined;
  let system: System;
  let key: string;
  let client: pg.Client;

  beforeAll(async () => {
    db = await createTestDatabase();
    broker = await ownBroker();
    await broker.start();
    fault = await startFaultSystem({
      databaseUrl: db.url,
      tenant: 'outage',
      model: scriptedModel().handler,
      env: { KAFKA_BROKERS: broker.brokers },
      system: { upstream },
    });
    ({ system, key } = fault);
    client = new pg.Client(db.url);
    await client.connect();
  }, 180_000);

  afterAll(async () => {
    await fault?.stop();
    await client?.end();
    await broker?.destroy();
    await db?.drop();
  });

  it(`accepts every request during ${SIZE.outages} outage(s) of 30 s and completes every accepted job`, async () => {
    const run = newRun();
    const load = startLoad({
      ratePerSecond: SIZE.rate,
      send: (index, signal) => postNews(system.gatewayUrl, key, newsRequest(run, index), signal),
    });
    const acceptedWhileDown: number[] = [];
    let backAt = 0;
    const outages = async () => {
      for (let outage = 0; outage < SIZE.outages; outage++) {
        const before = load.accepted.length;
        await waitFor(() => load.accepted.length >= before + 5, { what: 'jobs to be accepted before the outage' });
        await broker.stop();
        const down = load.accepted.length;
        await think(OUTAGE_MS);
        acceptedWhileDown.push(load.accepted.length - down);
        await broker.start();
        backAt = Date.now();
      }
      const after = load.accepted.length;
      await waitFor(() => load.accepted.length >= after + 5, { timeoutMs: 60_000, what: 'jobs to be accepted after the outage' });
    };
    const result = await outages().then(
      () => load.stop(),
      async (error: unknown) => {
        await load.stop();
        throw error;
      },
    );
    const ids = result.accepted;
    const refused = Object.values(result.refused).reduce((sum, count) => sum + count, 0);
    const outcomes = await settleJobs(client, ids, { timeoutMs: SETTLE_MS });
    const recoverySeconds = Math.round((Date.now() - backAt) / 1000);
    reportSurvival({
      scenario: `Kafka broker stopped for 30 s under load, ${upstream} upstream`,
      n: ids.length,
      survived: outcomes.survived,
      lost: outcomes.lost,
      details: {
        outages: SIZE.outages,
        'accepted while the broker was down': acceptedWhileDown.reduce((a, b) => a + b, 0),
        'requests refused': refused,
        ...describeOutcomes(outcomes),
        'seconds from the last restart to all settled': recoverySeconds,
      },
      problems: outcomes.problems,
    });
    // Every request was accepted, the broker's absence notwithstanding.
    expect(refused).toBe(0);
    expect(acceptedWhileDown.every((count) => count > 0)).toBe(true);
    expect(outcomes.completed).toBe(ids.length);
  }, 600_000);
});
