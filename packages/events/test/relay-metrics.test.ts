import { type Pool, createPool } from '@fin/db';
import { outboxOldestUnpublishedAge, outboxRelayLeader, outboxUnpublishedRows } from '@fin/metrics';
import { type TestDatabase, createTestDatabase, waitFor } from '@fin/testing';
import { type OutboxRelay, appendToOutbox, createOutboxRelay } from '../src';
import { testLogger, testTopic } from './helpers';

const value = async (gauge: { get(): Promise<{ values: { value: number }[] }> }) => (await gauge.get()).values[0]?.value ?? 0;

describe('outbox relay metrics', () => {
  let db: TestDatabase;
  let pool: Pool;
  const relays: OutboxRelay[] = [];
  const topic = testTopic('relay-metrics');
  /** The broker is "down" while this is true: every publish fails, so rows wait in the outbox. */
  let brokerDown = true;
  const bus = {
    publish: () => (brokerDown ? Promise.reject(new Error('broker unreachable')) : Promise.resolve()),
  };

  function startRelay(): OutboxRelay {
    const relay = createOutboxRelay({
      pool,
      bus,
      logger: testLogger(),
      pollIntervalMs: 50,
      standbyIntervalMs: 50,
      metricsIntervalMs: 50,
      backoff: { initialMs: 20, maxMs: 50 },
    });
    relay.start();
    relays.push(relay);
    return relay;
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool({ connectionString: db.url, applicationName: 'relay-metrics-test' });
  });
  afterAll(async () => {
    for (const relay of relays) await relay.stop();
    await pool.end();
    await db.drop();
  });

  it('reports one leader among the relays, the backlog and its oldest age while publishing fails, and zero once it drains', async () => {
    const first = startRelay();
    const second = startRelay();
    await waitFor(() => first.isLeader() || second.isLeader(), { what: 'a leader' });
    // Two relays in this process, one of them leading: the gauge counts leaders, so the sum over pods is 1.
    expect(await value(outboxRelayLeader)).toBe(1);

    for (const label of ['a', 'b', 'c']) await appendToOutbox(pool, topic, label, { seq: 1, label });
    // The first row was written 90 s ago, as far as the metrics can tell.
    await pool.query("UPDATE outbox SET created_at = now() - interval '90 seconds' WHERE id = (SELECT min(id) FROM outbox)");
    await waitFor(async () => (await value(outboxUnpublishedRows)) === 3 && (await value(outboxOldestUnpublishedAge)) >= 90, {
      what: 'the backlog of 3 rows, the oldest 90 s old',
    });

    // The leader goes; the standby takes over, and with it the counting.
    const [leader, standby] = first.isLeader() ? [first, second] : [second, first];
    await leader.stop();
    await waitFor(() => standby.isLeader(), { what: 'the standby to lead' });
    expect(await value(outboxRelayLeader)).toBe(1);

    brokerDown = false;
    await waitFor(async () => (await value(outboxUnpublishedRows)) === 0 && (await value(outboxOldestUnpublishedAge)) === 0, {
      what: 'the backlog to drain',
    });
    await standby.stop();
    expect(await value(outboxRelayLeader)).toBe(0);
  });
});
