import { createTestDatabase, waitFor, type TestDatabase } from '@fin/testing';
import pg from 'pg';
import { newsRequest, postNews, startLoad } from '../../src/load';
import { bySize, describeOutcomes, reportSurvival, settleJobs, startFaultSystem, type FaultSystem } from '../../src/reliability';
import { newRun, scriptedModel, think } from '../../src/scripted-model';
import type { ServiceProcess, System } from '../../src/system';

/** Leaders killed in all; the first `midPublish` of them between publishing a batch and marking it published. */
const SIZE = bySize({ ci: { kills: 3, midPublish: 1, rate: 4 }, full: { kills: 15, midPublish: 5, rate: 6 } });
const SETTLE_MS = bySize({ ci: 120_000, full: 300_000 });

/** The advisory-lock class the relay leader holds (RELAY_LEADER_LOCK_CLASS of packages/events/src/outbox.ts). */
const RELAY_LEADER_LOCK_CLASS = 0x6f627265;
/** The relay's "mark published" statement (packages/events/src/relay.ts), run after the bus accepted the batch. */
const MARK_PUBLISHED = 'UPDATE outbox SET published_at = now()%';

/**
 * The outbox relay's leader is killed (kill -9) while it publishes, under a steady load of jobs. Every process
 * of the system runs a relay (jobs service, news API, news worker); one leads, the others stand by and take over.
 */
describe('fault: the outbox relay killed mid-publishing', () => {
  let db: TestDatabase;
  let fault: FaultSystem | undefined;
  let system: System;
  let key: string;
  let client: pg.Client;

  beforeAll(async () => {
    db = await createTestDatabase();
    fault = await startFaultSystem({
      databaseUrl: db.url,
      tenant: 'relay',
      model: scriptedModel().handler,
      // A killed process's consumers are replaced after 6 s (the shortest session the config allows).
      env: { KAFKA_SESSION_TIMEOUT_MS: '6000' },
      workerEnv: { NEWS_LEASE_MS: '2000' },
    });
    ({ system, key } = fault);
    client = new pg.Client(db.url);
    await client.connect();
  }, 120_000);

  afterAll(async () => {
    await fault?.stop();
    await client?.end();
    await db?.drop();
  });

  /** The process whose relay holds the leader lock (by its connection's application_name: jobs, news-api, news-worker). */
  async function leader(): Promise<ServiceProcess> {
    const name = await waitFor(
      async () => {
        const { rows } = await client.query<{ application_name: string }>(
          `SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a USING (pid)
            WHERE l.locktype = 'advisory' AND l.granted AND l.classid = $1 AND l.objid = 0
              AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
          [RELAY_LEADER_LOCK_CLASS],
        );
        return rows[0]?.application_name;
      },
      { timeoutMs: 30_000, what: 'a relay to lead' },
    );
    const found = system.services.find((service) => service.name === name && service.child.exitCode === null);
    if (!found) throw new Error(`The relay leader runs in ${name}, which is not a running service`);
    return found;
  }

  /** kill -9, then the process again as it was (an orchestrator restarting it), ready to serve. */
  async function killAndRestart(service: ServiceProcess): Promise<void> {
    service.child.kill('SIGKILL');
    await service.exited;
    const gateway = system.services.find((candidate) => candidate.name === 'gateway')!;
    const readyUrl = { jobs: `${gateway.env.JOBS_URL}/readyz`, 'news-api': `${system.productUrls.news}/readyz` }[service.name];
    await system.restart(service, readyUrl);
  }

  /**
   * Catches the leader between publishing a batch and marking it published: a SHARE lock on the outbox lets the
   * relay read and publish rows but holds its "mark published" update. Returns the ids of the batch in flight,
   * or undefined when no batch was caught this time (nothing was waiting to be published).
   */
  async function catchLeaderMidPublish(): Promise<{ batch: string[]; killedAt: Date; leaderName: string } | undefined> {
    const locker = new pg.Client(db.url);
    await locker.connect();
    try {
      const { rows: me } = await locker.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE outbox IN SHARE MODE');
      // Nothing waiting to be published: no batch to catch this time (the lock keeps new rows out).
      const { rows: waiting } = await locker.query<{ n: number }>('SELECT count(*)::int AS n FROM outbox WHERE published_at IS NULL');
      if ((waiting[0]?.n ?? 0) === 0) {
        await locker.query('ROLLBACK');
        await think(50);
        return undefined;
      }
      // Rows are waiting, so the leader will publish them and then block in its mark: on a loaded machine
      // publishing can take seconds, hence the generous wait.
      const blocked = await waitFor(
        async () => {
          const { rows } = await client.query<{ application_name: string }>(
            'SELECT application_name FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid)) AND query LIKE $2',
            [me[0]!.pid, MARK_PUBLISHED],
          );
          return rows[0]?.application_name ?? false;
        },
        { timeoutMs: 15_000, intervalMs: 20, what: 'the relay to wait in its mark' },
      ).catch(() => undefined);
      if (blocked === undefined) {
        await locker.query('ROLLBACK');
        return undefined;
      }
      // The rows the leader has published and not yet marked (it holds them FOR UPDATE; a plain read sees them).
      const { rows: batch } = await client.query<{ id: string }>(
        'SELECT id::text AS id FROM outbox WHERE published_at IS NULL ORDER BY id',
      );
      const service = system.services.find((candidate) => candidate.name === blocked && candidate.child.exitCode === null)!;
      const killed = killAndRestart(service);
      await service.exited;
      const killedAt = new Date();
      await locker.query('ROLLBACK');
      await killed;
      return { batch: batch.map((row) => row.id), killedAt, leaderName: blocked };
    } finally {
      await locker.end();
    }
  }

  it(`loses no event and strands no job when the relay leader is killed ${SIZE.kills} times under load`, async () => {
    const run = newRun();
    const load = startLoad({
      ratePerSecond: SIZE.rate,
      send: (index, signal) => postNews(system.gatewayUrl, key, newsRequest(run, index), signal),
    });
    const killedLeaders: string[] = [];
    const republished: { batch: string[]; killedAt: Date }[] = [];
    const chaos = async () => {
      await waitFor(() => load.accepted.length >= 10, { what: 'the load to get going' });
      // First the deterministic kills: the leader holds a published, unmarked batch.
      for (let tries = 0; republished.length < SIZE.midPublish && tries < 500 * SIZE.midPublish; tries++) {
        const caught = await catchLeaderMidPublish();
        if (caught) {
          republished.push(caught);
          killedLeaders.push(caught.leaderName);
        }
      }
      // Then at random moments.
      while (killedLeaders.length < SIZE.kills) {
        await think(1_000 + Math.random() * 1_500);
        const current = await leader();
        killedLeaders.push(current.name);
        await killAndRestart(current);
      }
    };
    const result = await chaos().then(
      () => load.stop(),
      async (error: unknown) => {
        await load.stop();
        throw error;
      },
    );
    expect(republished).toHaveLength(SIZE.midPublish);

    const ids = result.accepted;
    const outcomes = await settleJobs(client, ids, { timeoutMs: SETTLE_MS });
    // Every event written to the outbox was published (job events reach their observers through Kafka; the job
    // state they describe was committed with them).
    await waitFor(
      async () => {
        const { rows } = await client.query<{ n: string }>('SELECT count(*) AS n FROM outbox WHERE published_at IS NULL');
        return rows[0]?.n === '0';
      },
      { timeoutMs: 60_000, what: 'the outbox to be drained' },
    );
    const { rows: events } = await client.query<{ topic: string; total: string; applied: string }>(
      `SELECT o.topic, count(*) AS total,
              count(*) FILTER (WHERE o.published_at IS NOT NULL) AS applied
         FROM outbox o GROUP BY o.topic`,
    );
    const total = events.reduce((sum, row) => sum + Number(row.total), 0);
    const delivered = events.reduce((sum, row) => sum + Number(row.applied), 0);
    // Each batch caught in flight was published again, by the relay that took over.
    let publishedTwice = 0;
    for (const caught of republished) {
      const { rows: batch } = await client.query<{ later: boolean }>(
        'SELECT published_at > $2 AS later FROM outbox WHERE id = ANY($1::bigint[])',
        [caught.batch, caught.killedAt],
      );
      expect(batch.length).toBeGreaterThan(0);
      expect(batch.every((row) => row.later)).toBe(true);
      publishedTwice += batch.length;
    }

    reportSurvival({
      scenario: 'outbox relay leader killed (events)',
      unit: 'events',
      n: total,
      survived: delivered,
      lost: total - delivered,
      details: {
        'leaders killed': killedLeaders.length,
        'killed between publish and mark': republished.length,
        'rows published twice': publishedTwice,
        leaders: [...new Set(killedLeaders)].join('/'),
      },
    });
    reportSurvival({
      scenario: 'outbox relay leader killed (jobs)',
      n: ids.length,
      survived: outcomes.survived,
      lost: outcomes.lost,
      details: {
        ...describeOutcomes(outcomes),
        'requests refused while a service restarted': Object.values(result.refused).reduce((a, b) => a + b, 0),
      },
      problems: outcomes.problems,
    });
  }, 300_000);
});
