import { type Pool, createPool, withTransaction } from '@fin/db';
import { childSpan, currentTrace, parseTraceparent, runInSpan, type TraceContext } from '@fin/log';
import { type TestDatabase, createTestDatabase, createTopics, testKafka, uniqueName, waitFor } from '@fin/testing';
import {
  type DeliveryMeta,
  type EnvelopeOf,
  type OutboxRelay,
  type Subscription,
  appendToOutbox,
  createKafkaBus,
  createOutboxRelay,
  type EventBus,
} from '../src';
import { type BusHarness, makeKafkaBus, pause, testLogger, testTopic } from './helpers';

type TestTopic = ReturnType<typeof testTopic>;

interface OutboxRow {
  id: string;
  event_id: string;
  message_key: string;
  published_at: Date | null;
  attempts: number;
  last_error: string | null;
}

describe('transactional outbox through the relay and a real broker', () => {
  let db: TestDatabase;
  let pool: Pool;
  let harness: BusHarness;
  let relay: OutboxRelay;
  let subscription: Subscription;
  let topic: TestTopic;
  const received: Array<{ envelope: EnvelopeOf<TestTopic>; meta: DeliveryMeta; trace: TraceContext | undefined }> = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool({ connectionString: db.url, applicationName: 'events-outbox-test' });
    harness = await makeKafkaBus();
    topic = testTopic('outbox');
    await harness.createTopics([topic]);
    subscription = await harness.bus.subscribe({
      topic,
      groupId: uniqueName('outbox-reader'),
      handler: async (envelope, meta) => void received.push({ envelope, meta, trace: currentTrace() }),
    });
    relay = createOutboxRelay({
      pool,
      bus: harness.bus,
      logger: testLogger(),
      // Polling and cleanup are rare, so what is delivered within seconds was woken by NOTIFY.
      pollIntervalMs: 30_000,
      cleanupIntervalMs: 30_000,
      backoff: { initialMs: 50, maxMs: 200 },
    });
    relay.start();
  });
  afterAll(async () => {
    await relay.stop();
    await subscription.stop();
    await harness.close();
    await pool.end();
    await db.drop();
  });

  const row = async (eventId: string) =>
    (await pool.query<OutboxRow>('SELECT id::text AS id, * FROM outbox WHERE event_id = $1', [eventId])).rows[0];
  const delivered = (eventId: string) => received.find(({ envelope }) => envelope.id === eventId);

  it("carries the writer's W3C trace to the consumer, whose handler runs in a child span of it", async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const span = childSpan(parseTraceparent(`00-${traceId}-00f067aa0ba902b7-01`));
    const envelope = await runInSpan(span, () => appendToOutbox(pool, topic, 'traced', { seq: 1, label: 'traced' }));
    const delivery = await waitFor(() => delivered(envelope.id), { what: 'the delivery', timeoutMs: 5_000 });
    expect(delivery.meta.headers.traceparent).toBe(`00-${traceId}-${span.spanId}-01`);
    expect(delivery.trace?.traceId).toBe(traceId);
    expect(delivery.trace?.spanId).not.toBe(span.spanId);
  });

  it('publishes an event committed with a state change, with its key and payload', async () => {
    const envelope = await withTransaction(pool, async (client) => {
      const { rows } = await client.query<{ id: string }>("INSERT INTO tenants (name) VALUES ('Acme') RETURNING id");
      const tenantId = rows[0]?.id as string;
      return appendToOutbox(client, topic, tenantId, { seq: 1, label: 'tenant created' }, { headers: { 'x-trace': 't-9' } });
    });

    const delivery = await waitFor(() => delivered(envelope.id), { what: 'the delivery', timeoutMs: 5_000 });
    expect(delivery.envelope).toEqual(envelope);
    expect(delivery.meta.key).toBe((await pool.query<{ id: string }>("SELECT id FROM tenants WHERE name = 'Acme'")).rows[0]?.id);
    expect(delivery.meta.headers).toMatchObject({ 'x-trace': 't-9' });
    await waitFor(async () => Boolean((await row(envelope.id))?.published_at), { what: 'the row to be marked published' });
  });

  it("publishes a batch in id order when the ids differ in length (a key's 99th event before its 100th)", async () => {
    // Ids such as 99, 100 and 101 committed together, so the relay reads them in one batch. Ordered as text they would
    // go out as 100, 101, 99: the consumer would see the key's first event last.
    const { rows } = await pool.query<{ max: string | null }>('SELECT max(id)::text AS max FROM outbox');
    let boundary = 10;
    while (boundary - 1 <= Number(rows[0]?.max ?? 0)) boundary *= 10;
    await pool.query("SELECT setval(pg_get_serial_sequence('outbox', 'id'), $1)", [boundary - 2]);
    const envelopes = await withTransaction(pool, async (client) => [
      await appendToOutbox(client, topic, 'digits', { seq: 1, label: 'first' }),
      await appendToOutbox(client, topic, 'digits', { seq: 2, label: 'second' }),
      await appendToOutbox(client, topic, 'digits', { seq: 3, label: 'third' }),
    ]);
    const ids = await Promise.all(envelopes.map(async (envelope) => (await row(envelope.id))?.id ?? ''));
    expect(new Set(ids.map((id) => id.length)).size).toBe(2);
    await waitFor(() => envelopes.every((envelope) => delivered(envelope.id)), { what: 'the three events' });
    const order = received.filter(({ meta }) => meta.key === 'digits').map(({ envelope }) => envelope.payload.label);
    expect(order).toEqual(['first', 'second', 'third']);
  });

  it('never publishes the event of a rolled-back transaction', async () => {
    let rolledBack: string | undefined;
    await expect(
      withTransaction(pool, async (client) => {
        await client.query("INSERT INTO tenants (name) VALUES ('Doomed')");
        rolledBack = (await appendToOutbox(client, topic, 'doomed', { seq: 1, label: 'doomed' })).id;
        throw new Error('the state change failed');
      }),
    ).rejects.toThrow('the state change failed');
    const marker = await appendToOutbox(pool, topic, 'doomed', { seq: 2, label: 'marker' });

    await waitFor(() => delivered(marker.id), { what: 'the marker' });
    expect(rolledBack).toBeDefined();
    expect(delivered(rolledBack as string)).toBeUndefined();
    expect(await row(rolledBack as string)).toBeUndefined();
  });

  it('publishes a row whose transaction commits after a later row was published', async () => {
    const late = await pool.connect();
    try {
      await late.query('BEGIN');
      const a = await appendToOutbox(late, topic, 'key-a', { seq: 1, label: 'A, committed late' });
      const b = await withTransaction(pool, (client) => appendToOutbox(client, topic, 'key-b', { seq: 1, label: 'B' }));

      await waitFor(() => delivered(b.id), { what: 'B' });
      const { rows } = await late.query<{ id: string }>('SELECT id::text AS id FROM outbox WHERE event_id = $1', [a.id]);
      expect(Number((await row(b.id))?.id)).toBeGreaterThan(Number(rows[0]?.id));
      expect(delivered(a.id)).toBeUndefined();
      await late.query('COMMIT');

      await waitFor(() => delivered(a.id), { what: 'A after its late commit' });
      expect((await row(a.id))?.published_at).not.toBeNull();
    } finally {
      late.release();
    }
  });

  it('allocates the ids of one key in commit order: a second writer of the key waits for the first', async () => {
    const first = await pool.connect();
    const second = await pool.connect();
    try {
      await first.query('BEGIN');
      await second.query('BEGIN');
      const one = await appendToOutbox(first, topic, 'contended', { seq: 1, label: 'first' });
      let secondDone = false;
      const two = appendToOutbox(second, topic, 'contended', { seq: 2, label: 'second' }).finally(() => (secondDone = true));
      // Another key is not held up.
      await withTransaction(pool, (client) => appendToOutbox(client, topic, 'other', { seq: 1, label: 'other key' }));
      await pause(200);
      expect(secondDone).toBe(false);

      await first.query('COMMIT');
      const twoEnvelope = await two;
      await second.query('COMMIT');
      expect(Number((await row(twoEnvelope.id))?.id)).toBeGreaterThan(Number((await row(one.id))?.id));

      const order = await waitFor(
        () => {
          const ids = received.filter(({ meta }) => meta.key === 'contended').map(({ envelope }) => envelope.id);
          return ids.length === 2 && ids;
        },
        { what: 'both events of the key' },
      );
      expect(order).toEqual([one.id, twoEnvelope.id]);
    } finally {
      first.release();
      second.release();
    }
  });
});

describe('relay housekeeping and failures', () => {
  let db: TestDatabase;
  let pool: Pool;
  let bus: EventBus;
  let relay: OutboxRelay;
  const removals: Array<() => Promise<void>> = [];
  const kafka = testKafka();

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool({ connectionString: db.url, applicationName: 'events-outbox-failure-test' });
    bus = createKafkaBus({ kafka, logger: testLogger() });
  });
  afterEach(async () => {
    await relay.stop();
  });
  afterAll(async () => {
    await bus.close();
    for (const remove of removals) await remove();
    await pool.end();
    await db.drop();
  });

  const rowOf = async (eventId: string) => (await pool.query<OutboxRow>('SELECT * FROM outbox WHERE event_id = $1', [eventId])).rows[0];

  it('deletes published rows past the retention, and only those', async () => {
    const topic = testTopic('cleanup');
    removals.push(await createTopics(kafka, [topic.name], 3));
    relay = createOutboxRelay({ pool, bus, logger: testLogger(), pollIntervalMs: 100, cleanupIntervalMs: 200 });
    relay.start();
    const old = await appendToOutbox(pool, topic, 'old', { seq: 1, label: 'old' });
    const recent = await appendToOutbox(pool, topic, 'recent', { seq: 1, label: 'recent' });
    await waitFor(async () => Boolean((await rowOf(recent.id))?.published_at), { what: 'the rows to be published' });
    await relay.stop();
    // Published more than a day ago: past the default retention.
    await pool.query("UPDATE outbox SET published_at = now() - interval '25 hours' WHERE event_id = $1", [old.id]);
    // Older still, but never published (its topic does not exist): it must stay.
    const stuck = await appendToOutbox(pool, testTopic('missing'), 'stuck', { seq: 1, label: 'unpublishable' });
    await pool.query("UPDATE outbox SET created_at = now() - interval '30 days' WHERE event_id = $1", [stuck.id]);

    relay = createOutboxRelay({ pool, bus, logger: testLogger(), pollIntervalMs: 100, cleanupIntervalMs: 200 });
    relay.start();
    await waitFor(async () => (await rowOf(old.id)) === undefined, { what: 'the cleanup' });
    expect(await rowOf(recent.id)).toBeDefined();
    expect(await rowOf(stuck.id)).toMatchObject({ published_at: null });
    await relay.stop();
    await pool.query('DELETE FROM outbox WHERE event_id = $1', [stuck.id]);
  });

  it('publishes at once after a quiet spell, and while busy gathers the rows of a few ms into one batch', async () => {
    const topic = testTopic('batched');
    removals.push(await createTopics(kafka, [topic.name], 3));
    const batches: number[] = [];
    const counting: Pick<EventBus, 'publish'> = {
      publish: (messages) => {
        batches.push(messages.length);
        return bus.publish(messages);
      },
    };
    relay = createOutboxRelay({ pool, bus: counting, logger: testLogger(), pollIntervalMs: 30_000, batchIntervalMs: 200 });
    relay.start();
    const first = await appendToOutbox(pool, topic, 'k0', { seq: 1, label: 'after a quiet spell' });
    await waitFor(async () => Boolean((await rowOf(first.id))?.published_at), { what: 'the first row to be published' });
    expect(batches).toEqual([1]);
    // Well after the first batch: published at once; the next rows, written while the relay is busy, go out together.
    await pause(300);
    const rows: EnvelopeOf<typeof topic>[] = [];
    for (let seq = 1; seq <= 5; seq++) rows.push(await appendToOutbox(pool, topic, `k${seq}`, { seq, label: 'busy' }));
    await waitFor(async () => (await Promise.all(rows.map((row) => rowOf(row.id)))).every((row) => row?.published_at), {
      what: 'the busy rows to be published',
    });
    expect(batches.slice(1).reduce((sum, size) => sum + size, 0)).toBe(5);
    expect(batches.length).toBeLessThanOrEqual(3);
  });

  it('records the failure, retries, and lets no later row overtake the failing one', async () => {
    const missing = testTopic('not-yet-created');
    const existing = testTopic('exists');
    removals.push(await createTopics(kafka, [existing.name], 3));
    const blocked = await appendToOutbox(pool, missing, 'k1', { seq: 1, label: 'topic missing' });
    const behind = await appendToOutbox(pool, existing, 'k2', { seq: 1, label: 'behind it' });

    relay = createOutboxRelay({ pool, bus, logger: testLogger(), pollIntervalMs: 100, backoff: { initialMs: 50, maxMs: 100 } });
    relay.start();
    const failed = await waitFor(
      async () => {
        const current = await rowOf(blocked.id);
        return current && current.attempts >= 1 && current;
      },
      { what: 'a failed attempt', timeoutMs: 30_000 },
    );
    expect(failed.published_at).toBeNull();
    expect(failed.last_error).toMatch(/topic|partition/i);
    expect((await rowOf(behind.id))?.published_at).toBeNull();

    removals.push(await createTopics(kafka, [missing.name], 3));
    await waitFor(async () => Boolean((await rowOf(behind.id))?.published_at), {
      what: 'both rows to be published',
      timeoutMs: 30_000,
    });
    const published = await rowOf(blocked.id);
    expect(published?.published_at).not.toBeNull();
    expect(published?.last_error).toBeNull();
  });
});
