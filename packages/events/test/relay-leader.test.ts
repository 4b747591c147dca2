import { type Pool, createPool } from '@fin/db';
import { type TestDatabase, createTestDatabase, uniqueName, waitFor } from '@fin/testing';
import { type MemoryEventBus, type OutboxRelay, appendToOutbox, createMemoryBus, createOutboxRelay } from '../src';
import { RELAY_LEADER_LOCK_CLASS } from '../src/outbox';
import { testLogger, testTopic } from './helpers';

/** A relay publishing to its own in-process bus, so the test can tell which relay published what. */
interface Node {
  name: string;
  bus: MemoryEventBus;
  relay: OutboxRelay;
  published: string[];
}

describe('outbox relay leader election', () => {
  let db: TestDatabase;
  let pool: Pool;
  const nodes: Node[] = [];
  const topic = testTopic('leader');

  async function startNode(name: string): Promise<Node> {
    const bus = createMemoryBus({ logger: testLogger() });
    const published: string[] = [];
    await bus.subscribe({ topic, groupId: uniqueName('observer'), handler: async (envelope) => void published.push(envelope.id) });
    const relay = createOutboxRelay({
      pool,
      bus,
      logger: testLogger(),
      pollIntervalMs: 100,
      standbyIntervalMs: 100,
      backoff: { initialMs: 50, maxMs: 100 },
    });
    relay.start();
    const node = { name, bus, relay, published };
    nodes.push(node);
    return node;
  }

  const leaders = () => nodes.filter((node) => node.relay.isLeader());
  const append = (label: string) => appendToOutbox(pool, topic, label, { seq: 1, label });
  const unpublished = async () =>
    Number((await pool.query<{ count: string }>('SELECT count(*) FROM outbox WHERE published_at IS NULL')).rows[0]?.count);

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool({ connectionString: db.url, applicationName: 'events-leader-test' });
  });
  afterAll(async () => {
    for (const node of nodes) {
      await node.relay.stop();
      await node.bus.close();
    }
    await pool.end();
    await db.drop();
  });

  it('lets one relay publish, and a standby take over when the leader stops or its connection dies', async () => {
    const first = await startNode('first');
    const second = await startNode('second');
    const [leader] = await waitFor(() => leaders().length === 1 && leaders(), { what: 'a leader' });
    const standby = leader === first ? second : first;

    const events = await Promise.all(Array.from({ length: 10 }, (_, index) => append(`before-${index}`)));
    await waitFor(() => leader?.published.length === 10, { what: 'the leader to publish' });
    expect(leader?.published.sort()).toEqual(events.map((event) => event.id).sort());
    expect(standby.published).toEqual([]);
    expect(leaders()).toEqual([leader]);

    // A graceful stop hands over.
    await leader?.relay.stop();
    await waitFor(() => standby.relay.isLeader(), { what: 'the standby to take over' });
    const afterStop = await append('after-stop');
    await waitFor(() => standby.published.includes(afterStop.id), { what: 'the new leader to publish' });

    // A leader whose connection dies loses the lock with it; whichever relay gets it publishes.
    const third = await startNode('third');
    const { rows } = await pool.query<{ pid: number }>(
      "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND classid::bigint = $1 AND objid = 0 AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
      [RELAY_LEADER_LOCK_CLASS],
    );
    expect(rows).toHaveLength(1);
    await pool.query('SELECT pg_terminate_backend($1)', [rows[0]?.pid]);
    const afterCrash = await append('after-crash');
    await waitFor(async () => (await unpublished()) === 0, { what: 'publishing after the crash' });
    await waitFor(() => leaders().length === 1, { what: 'a single leader again' });
    expect([...standby.published, ...third.published].filter((id) => id === afterCrash.id)).toHaveLength(1);
  });
});
