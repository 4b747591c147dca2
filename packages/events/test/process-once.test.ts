import { randomUUID } from 'node:crypto';
import { type Pool, createPool, withTransaction } from '@fin/db';
import { type TestDatabase, createTestDatabase, uniqueName, waitFor } from '@fin/testing';
import { createEnvelope, processOnce } from '../src';
import { type BusHarness, makeKafkaBus, pause, testTopic } from './helpers';

describe('processOnce', () => {
  let db: TestDatabase;
  let pool: Pool;
  let harness: BusHarness;

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool({ connectionString: db.url, applicationName: 'events-process-once-test' });
    harness = await makeKafkaBus();
  });
  afterAll(async () => {
    await harness.close();
    await pool.end();
    await db.drop();
  });

  const tenantCount = async (name: string) =>
    Number((await pool.query<{ count: string }>('SELECT count(*) FROM tenants WHERE name = $1', [name])).rows[0]?.count);

  it('runs the work of a duplicate delivery once', async () => {
    const topic = testTopic('once');
    await harness.createTopics([topic]);
    let deliveries = 0;
    const outcomes: string[] = [];
    const subscription = await harness.bus.subscribe({
      topic,
      groupId: uniqueName('once'),
      handler: async (envelope) => {
        deliveries += 1;
        const outcome = await processOnce(pool, 'tenant-creator', envelope.id, (client) =>
          client.query('INSERT INTO tenants (name) VALUES ($1)', [envelope.payload.label]),
        );
        outcomes.push(outcome.status);
      },
    });
    try {
      // The relay may publish a row twice (a publish whose mark did not commit): the same envelope twice.
      const envelope = createEnvelope(topic, { seq: 1, label: 'Once Inc' });
      await harness.bus.publish([{ topic: topic.name, key: 'k', envelope }]);
      await harness.bus.publish([{ topic: topic.name, key: 'k', envelope }]);
      await waitFor(() => deliveries === 2, { what: 'both deliveries' });
    } finally {
      await subscription.stop();
    }
    expect(outcomes).toEqual(['processed', 'duplicate']);
    expect(await tenantCount('Once Inc')).toBe(1);
  });

  it('lets one of two concurrent duplicates do the work', async () => {
    const eventId = randomUUID();
    let runs = 0;
    const work = async () => {
      const outcome = await processOnce(pool, 'concurrent', eventId, async (client) => {
        runs += 1;
        await pause(100);
        await client.query("INSERT INTO tenants (name) VALUES ('Concurrent Ltd')");
        return 'done';
      });
      return outcome.status;
    };
    expect((await Promise.all([work(), work()])).sort()).toEqual(['duplicate', 'processed']);
    expect(runs).toBe(1);
    expect(await tenantCount('Concurrent Ltd')).toBe(1);
  });

  it('does not mark an event whose work failed, so a retry runs it', async () => {
    const eventId = randomUUID();
    await expect(
      processOnce(pool, 'flaky', eventId, async () => {
        throw new Error('work failed');
      }),
    ).rejects.toThrow('work failed');
    const retry = await processOnce(pool, 'flaky', eventId, async () => 42);
    expect(retry).toEqual({ status: 'processed', result: 42 });
  });

  it('keeps consumers independent and commits the mark with the caller’s transaction', async () => {
    const eventId = randomUUID();
    expect((await processOnce(pool, 'consumer-a', eventId, async () => 'a')).status).toBe('processed');
    expect((await processOnce(pool, 'consumer-b', eventId, async () => 'b')).status).toBe('processed');

    await expect(
      withTransaction(pool, async (client) => {
        await processOnce(client, 'consumer-c', eventId, async () => 'c');
        throw new Error('the caller rolls back');
      }),
    ).rejects.toThrow('the caller rolls back');
    const again = await withTransaction(pool, (client) => processOnce(client, 'consumer-c', eventId, async () => 'c'));
    expect(again).toEqual({ status: 'processed', result: 'c' });
  });
});
