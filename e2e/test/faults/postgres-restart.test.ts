import { waitFor } from '@fin/testing';
import { newsRequest, postNews, startLoad } from '../../src/load';
import { startPrivatePostgres, type PrivatePostgres } from '../../src/private-postgres';
import { bySize, describeOutcomes, reportSurvival, settleJobs, startFaultSystem, withDb, type FaultSystem } from '../../src/reliability';
import { newRun, scriptedModel, think, type ScriptedModel } from '../../src/scripted-model';
import { UPSTREAM_MODES, type System, type UpstreamMode } from '../../src/system';

const SIZE = bySize({ ci: { restarts: 2, outages: 1, rate: 4 }, full: { restarts: 6, outages: 3, rate: 6 } });
/** A longer outage, as a managed database's failover is: the server is down this long. */
const OUTAGE_MS = 10_000;
const SETTLE_MS = bySize({ ci: 120_000, full: 300_000 });

/**
 * PostgreSQL crashes and comes back (`pg_ctl restart -m immediate`: connections cut, no checkpoint, crash
 * recovery) while jobs keep arriving. It is a cluster of the test's own: the machine's shared server is never
 * restarted. A request answered 202 was committed, so its job must exist afterwards and complete.
 */
/** Through the deployed shape in CI; npm start's one process too at full size (RELIABILITY_SIZE=full). */
const UPSTREAMS = bySize<readonly UpstreamMode[]>({ ci: ['http'], full: UPSTREAM_MODES });

describe.each(UPSTREAMS)('fault: PostgreSQL restarted (immediate) under load (%s upstream)', (upstream) => {
  let database: PrivatePostgres;
  let model: ScriptedModel;
  let fault: FaultSystem | undefined;
  let system: System;
  let key: string;

  beforeAll(async () => {
    database = await startPrivatePostgres();
    model = scriptedModel();
    // A lease of 4 s: a job whose result commit died with the database is retried within seconds.
    fault = await startFaultSystem({
      databaseUrl: database.url,
      tenant: 'restart',
      model: model.handler,
      workerEnv: { NEWS_LEASE_MS: '4000' },
      system: { upstream },
    });
    ({ system, key } = fault);
  }, 120_000);

  afterAll(async () => {
    await fault?.stop();
    await database?.destroy();
  });

  it(`keeps every accepted job through ${SIZE.restarts} immediate restart(s) and completes it`, async () => {
    const run = newRun();
    const load = startLoad({
      ratePerSecond: SIZE.rate,
      send: (index, signal) => postNews(system.gatewayUrl, key, newsRequest(run, index), signal),
    });
    const restarts = async () => {
      for (let restart = 0; restart < SIZE.restarts; restart++) {
        const before = load.accepted.length;
        await waitFor(() => load.accepted.length >= before + 10, { timeoutMs: 60_000, what: 'jobs to be accepted before the restart' });
        await database.restartImmediate();
      }
      const after = load.accepted.length;
      await waitFor(() => load.accepted.length >= after + 10, { timeoutMs: 60_000, what: 'jobs to be accepted after the restart' });
    };
    const result = await restarts().then(
      () => load.stop(),
      async (error: unknown) => {
        await load.stop();
        throw error;
      },
    );
    const ids = result.accepted;
    const refused = Object.values(result.refused).reduce((sum, count) => sum + count, 0);
    const outcomes = await withDb(database.url, (client) => settleJobs(client, ids, { timeoutMs: SETTLE_MS }));
    reportSurvival({
      scenario: `PostgreSQL restarted (pg_ctl restart -m immediate) under load, ${upstream} upstream`,
      n: ids.length,
      survived: outcomes.survived,
      lost: outcomes.lost,
      details: { restarts: SIZE.restarts, 'requests refused while the database was down': refused, ...describeOutcomes(outcomes) },
      problems: outcomes.problems,
    });
    expect(outcomes.completed).toBe(ids.length);
  }, 400_000);

  it(`keeps every accepted job through ${SIZE.outages} outage(s) of ${OUTAGE_MS / 1000} s and completes it`, async () => {
    const run = newRun();
    // A model that takes its time (as the real one does), so requests queue in Kafka when the outage begins.
    model.setHook(async () => {
      await think(400);
      return undefined;
    });
    const load = startLoad({
      ratePerSecond: SIZE.rate,
      send: (index, signal) => postNews(system.gatewayUrl, key, newsRequest(run, index), signal),
    });
    const outages = async () => {
      for (let outage = 0; outage < SIZE.outages; outage++) {
        const before = load.accepted.length;
        await waitFor(() => load.accepted.length >= before + 10, { timeoutMs: 60_000, what: 'jobs to be accepted before the outage' });
        await database.downFor(OUTAGE_MS);
      }
      const after = load.accepted.length;
      await waitFor(() => load.accepted.length >= after + 10, { timeoutMs: 60_000, what: 'jobs to be accepted after the outage' });
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
    const outcomes = await withDb(database.url, (client) => settleJobs(client, ids, { timeoutMs: SETTLE_MS }));
    reportSurvival({
      scenario: `PostgreSQL down for ${OUTAGE_MS / 1000} s (stop -m immediate, start) under load, ${upstream} upstream`,
      n: ids.length,
      survived: outcomes.survived,
      lost: outcomes.lost,
      details: { outages: SIZE.outages, 'requests refused while the database was down': refused, ...describeOutcomes(outcomes) },
      problems: outcomes.problems,
    });
    expect(outcomes.completed).toBe(ids.length);
  }, 400_000);
});
