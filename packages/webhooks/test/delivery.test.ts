// Webhooks on a real database, a real (in-process) bus and a real HTTPS receiver: job events queue one delivery
// per endpoint and callback, the dispatcher signs and sends them through the SSRF-safe executor, retries on a
// failure with backoff, records every attempt, gives up after the retry window, and a lease left by a dead
// dispatcher is taken over. Tenants never see each other's events.
import { randomBytes, randomUUID } from 'node:crypto';
import { WebhookCreateRequest } from '@fin/contracts';
import { createKeyring, createToolExecutor, type ToolExecutor } from '@fin/customer-tools';
import { testCertificate } from '@fin/customer-tools/testing';
import { createPool, type Pool } from '@fin/db';
import { createMemoryBus, createPublisher, jobsEventsTopic, type MemoryEventBus } from '@fin/events';
import { createLogger } from '@fin/log';
import { webhookAttempts } from '@fin/metrics';
import type { z } from 'zod';
import { createTestDatabase, waitFor, type TestDatabase } from '@fin/testing';
import {
  createWebhookDispatcher,
  createWebhookStore,
  productsReadableWith,
  queueJobEvent,
  registerCallback,
  startWebhookConsumer,
  type WebhookDispatcher,
  type WebhookStore,
} from '../src';
import { standardWebhooksProblem, startFakeReceiver, type FakeReceiver } from './support';

const logger = createLogger({ service: 'webhooks-test', level: 'silent' });
const keyring = createKeyring({ id: 'k1', key: randomBytes(32) });
const loopback = { allowLoopback: true };
const ALL_PRODUCTS = ['news', 'stock-report', 'analysis'] as const;

describe('webhook delivery', () => {
  let db: TestDatabase;
  let pool: Pool;
  let store: WebhookStore;
  let executor: ToolExecutor;
  let receiver: FakeReceiver;
  /** A receiver that accepts every request and never answers it. */
  let hanging: FakeReceiver;
  let tenantId: string;
  let otherTenantId: string;
  const dispatchers: WebhookDispatcher[] = [];

  const dispatcher = (options: Partial<Parameters<typeof createWebhookDispatcher>[0]> = {}) => {
    const made = createWebhookDispatcher({
      pool,
      keyring,
      executor,
      logger,
      intervalMs: 50,
      retry: { baseMs: 100, maxMs: 400 },
      ...options,
    });
    dispatchers.push(made);
    return made;
  };
  const endpoint = (tenant: string, fields: Partial<z.input<typeof WebhookCreateRequest>> = {}) =>
    store.create(tenant, WebhookCreateRequest.parse({ url: `${receiver.url}/hooks`, ...fields }), ALL_PRODUCTS);
  const job = async (tenant: string, status: 'completed' | 'failed' | 'running' = 'completed') => {
    const id = randomUUID();
    await pool.query(
      `INSERT INTO jobs (id, tenant_id, type, status, request, result, error, finished_at)
       VALUES ($1, $2, 'news', $3, '{}', $4, $5, CASE WHEN $3 IN ('completed', 'failed') THEN now() END)`,
      [
        id,
        tenant,
        status,
        status === 'completed' ? { news: [] } : null,
        status === 'failed' ? { type: 'internal_error', detail: 'It broke.' } : null,
      ],
    );
    return id;
  };
  const terminal = (jobId: string, status: 'completed' | 'failed' = 'completed') => ({
    jobId,
    jobType: 'news' as const,
    status,
    at: new Date(),
    result: status === 'completed' ? { news: [] } : null,
    error: status === 'failed' ? { type: 'internal_error', detail: 'It broke.' } : null,
  });

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool({ connectionString: db.url, applicationName: 'webhooks-test' });
    store = createWebhookStore({ pool, keyring, addressPolicy: loopback, retryWindowMs: 60_000 });
    executor = createToolExecutor({ ...loopback, ca: (await testCertificate()).cert });
    receiver = await startFakeReceiver();
    hanging = await startFakeReceiver({ otherwise: 'hang' });
    const { rows } = await pool.query<{ id: string }>("INSERT INTO tenants (name) VALUES ('acme'), ('globex') RETURNING id");
    tenantId = rows[0]?.id ?? '';
    otherTenantId = rows[1]?.id ?? '';
  });

  afterEach(async () => {
    await Promise.all(dispatchers.splice(0).map((made) => made.stop()));
    await pool.query(
      'DELETE FROM webhook_endpoints; DELETE FROM webhook_deliveries; DELETE FROM webhook_callbacks; DELETE FROM rate_limit_counters',
    );
    receiver.reset();
  });

  afterAll(async () => {
    await hanging?.close();
    await receiver?.close();
    await executor?.close();
    await pool?.end();
    await db?.drop();
  });

  it('sends a terminal job event, signed, to every endpoint of the tenant that wants it', async () => {
    const both = await endpoint(tenantId);
    const failedOnly = await endpoint(tenantId, { events: ['job.failed'] });
    await endpoint(tenantId, { enabled: false });
    const foreign = await endpoint(otherTenantId);
    const jobId = await job(tenantId);
    expect(await queueJobEvent(pool, terminal(jobId))).toBe(1);
    // The same event again (a redelivered Kafka message) queues nothing more.
    expect(await queueJobEvent(pool, terminal(jobId))).toBe(0);

    expect(await dispatcher().runOnce()).toBe(1);
    const [delivery] = await receiver.waitFor(1);
    expect(delivery?.path).toBe('/hooks');
    expect(standardWebhooksProblem(both.secret, delivery?.headers ?? {}, delivery?.body ?? '')).toBeNull();
    expect(standardWebhooksProblem(failedOnly.secret, delivery?.headers ?? {}, delivery?.body ?? '')).toBe('no signature matches');
    expect(standardWebhooksProblem(foreign.secret, delivery?.headers ?? {}, delivery?.body ?? '')).toBe('no signature matches');
    expect(delivery?.headers['content-type']).toBe('application/json');
    expect(JSON.parse(delivery?.body ?? '')).toMatchObject({
      type: 'job.completed',
      data: {
        job_id: jobId,
        job_type: 'news',
        status: 'completed',
        status_url: `/api/jobs/news/${jobId}/status`,
        result_url: `/api/jobs/news/${jobId}/result`,
        result: { news: [] },
      },
    });
    const [listed] = (await store.deliveries(tenantId, both.id, 10, ALL_PRODUCTS)) ?? [];
    expect(listed).toMatchObject({ id: delivery?.headers['webhook-id'], status: 'succeeded', attempt_count: 1, next_attempt_at: null });
    expect(listed?.attempts).toEqual([expect.objectContaining({ outcome: 'ok', http_status: 204, error: null })]);
    expect(await store.deliveries(otherTenantId, both.id, 10, ALL_PRODUCTS)).toBeNull();
  });

  it('retries after failures with backoff, keeping the id and body, and records each attempt', async () => {
    const hook = await endpoint(tenantId);
    receiver.answer(500, 503);
    await queueJobEvent(pool, terminal(await job(tenantId), 'failed'));
    dispatcher().start();
    const received = await receiver.waitFor(3);
    expect(new Set(received.map((delivery) => delivery.headers['webhook-id'])).size).toBe(1);
    expect(new Set(received.map((delivery) => delivery.body)).size).toBe(1);
    expect(JSON.parse(received[0]?.body ?? '')).toMatchObject({
      type: 'job.failed',
      data: { error: { type: 'internal_error', detail: 'It broke.' } },
    });
    // Backoff: the second retry waited longer than the first (100 ms, then 200 ms, each ±20 %).
    const gaps = [1, 2].map((i) => (received[i]?.receivedAt ?? 0) - (received[i - 1]?.receivedAt ?? 0));
    expect(gaps[0]).toBeGreaterThanOrEqual(70);
    expect(gaps[1]).toBeGreaterThanOrEqual(150);
    const delivery = await waitFor(async () => {
      const [listed] = (await store.deliveries(tenantId, hook.id, 10, ALL_PRODUCTS)) ?? [];
      return listed?.status === 'succeeded' ? listed : undefined;
    });
    expect(delivery.attempts.map((attempt) => [attempt.outcome, attempt.http_status])).toEqual([
      ['ok', 204],
      ['http_error', 503],
      ['http_error', 500],
    ]);
    expect(delivery.attempts[2]?.response_excerpt).toBe('answer 500');
    const counted = (await webhookAttempts.get()).values;
    const retried = counted.filter((value) => value.labels.outcome === 'http_error' && value.labels.delivery === 'retrying');
    expect(retried.reduce((sum, value) => sum + value.value, 0)).toBeGreaterThanOrEqual(2);
  });

  it('marks a delivery failed once its retry window has passed, and redelivers it on request', async () => {
    const hook = await endpoint(tenantId);
    receiver.answer(500, 500, 500, 500, 500, 500, 500, 500, 500, 500);
    await queueJobEvent(pool, terminal(await job(tenantId)), { retryWindowMs: 400 });
    dispatcher().start();
    const failed = await waitFor(async () => {
      const [listed] = (await store.deliveries(tenantId, hook.id, 10, ALL_PRODUCTS)) ?? [];
      return listed?.status === 'failed' ? listed : undefined;
    });
    expect(failed.next_attempt_at).toBeNull();
    expect(failed.attempts.length).toBeGreaterThanOrEqual(2);
    const attemptsBefore = failed.attempts.length;
    receiver.reset();
    receiver.answer(200);
    // Another tenant cannot redeliver it; its owner can.
    expect(await store.redeliver(otherTenantId, hook.id, failed.id, ALL_PRODUCTS)).toBeNull();
    expect(await store.redeliver(tenantId, hook.id, failed.id, ALL_PRODUCTS)).toMatchObject({ status: 'pending' });
    await receiver.waitFor(1);
    const redelivered = await waitFor(async () => {
      const [listed] = (await store.deliveries(tenantId, hook.id, 10, ALL_PRODUCTS)) ?? [];
      return listed?.status === 'succeeded' ? listed : undefined;
    });
    expect(redelivered.attempts).toHaveLength(attemptsBefore + 1);
    expect(receiver.received[0]?.headers['webhook-id']).toBe(failed.id);
  });

  it('takes over a delivery whose dispatcher died holding it, once the lease expires', async () => {
    const hook = await endpoint(tenantId);
    await queueJobEvent(pool, terminal(await job(tenantId)));
    // A dispatcher claimed it and died: the lease is left in the row.
    await pool.query("UPDATE webhook_deliveries SET lease_owner = 'dead', lease_expires_at = now() + interval '300 milliseconds'");
    const survivor = dispatcher();
    expect(await survivor.runOnce()).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, 350));
    expect(await survivor.runOnce()).toBe(1);
    await receiver.waitFor(1);
    const [listed] = (await store.deliveries(tenantId, hook.id, 10, ALL_PRODUCTS)) ?? [];
    expect(listed).toMatchObject({ status: 'succeeded', attempt_count: 1 });
  });

  it('shares due deliveries between dispatchers without sending any twice', async () => {
    await endpoint(tenantId);
    for (let i = 0; i < 12; i++) await queueJobEvent(pool, terminal(await job(tenantId)));
    const [a, b] = [dispatcher({ batchSize: 4 }), dispatcher({ batchSize: 4 })];
    // Passes of both at once, until every delivery went out. A pass may claim nothing while the other holds the
    // endpoint's 4 attempts in flight (the per-endpoint bound), so how many passes it takes is not fixed.
    let sent = 0;
    for (let round = 0; round < 10 && sent < 12; round++)
      sent += (await Promise.all([a.runOnce(), b.runOnce(), a.runOnce(), b.runOnce()])).reduce((sum, n) => sum + n, 0);
    expect(sent).toBe(12);
    const received = await receiver.waitFor(12);
    expect(received).toHaveLength(12);
    expect(new Set(received.map((delivery) => delivery.headers['webhook-id'])).size).toBe(12);
  });

  it('refuses private addresses: an IP literal at registration, any other at the call, without connecting', async () => {
    await expect(store.create(tenantId, WebhookCreateRequest.parse({ url: 'https://10.0.0.7/hook' }), ALL_PRODUCTS)).rejects.toThrow(
      'url: 10.0.0.7 is not a public internet address',
    );
    await expect(
      store.create(tenantId, WebhookCreateRequest.parse({ url: 'https://[::ffff:169.254.169.254]/' }), ALL_PRODUCTS),
    ).rejects.toThrow('is not a public internet address');
    // Registered by name; the name resolves to a private address when the delivery is sent.
    const strict = createToolExecutor({ resolve: () => Promise.resolve(['192.168.1.20']) });
    const hook = await store.create(tenantId, WebhookCreateRequest.parse({ url: 'https://hooks.internal.example/x' }), ALL_PRODUCTS);
    await queueJobEvent(pool, terminal(await job(tenantId)));
    await createWebhookDispatcher({ pool, keyring, executor: strict, logger }).runOnce();
    await strict.close();
    const [listed] = (await store.deliveries(tenantId, hook.id, 10, ALL_PRODUCTS)) ?? [];
    expect(listed?.attempts[0]).toMatchObject({ outcome: 'blocked_address', http_status: null });
    expect(listed?.status).toBe('pending');
  });

  it('holds the deliveries of a disabled endpoint until it is enabled again', async () => {
    const hook = await endpoint(tenantId, { enabled: false });
    const queued = await store.queueTest(tenantId, hook.id, ALL_PRODUCTS);
    expect(await dispatcher().runOnce()).toBe(0);
    expect(receiver.received).toHaveLength(0);
    await store.update(tenantId, hook.id, WebhookCreateRequest.parse({ url: `${receiver.url}/hooks` }), ALL_PRODUCTS);
    expect(await dispatcher().runOnce()).toBe(1);
    const [delivery] = await receiver.waitFor(1);
    expect(delivery?.headers['webhook-id']).toBe(queued?.id);
    expect(JSON.parse(delivery?.body ?? '')).toMatchObject({ type: 'webhook.test', data: { job_id: null } });
  });

  it('deletes finished deliveries after 30 days, never a pending one', async () => {
    const hook = await endpoint(tenantId);
    for (let i = 0; i < 3; i++) await store.queueTest(tenantId, hook.id, ALL_PRODUCTS);
    const { rows } = await pool.query<{ id: string }>('SELECT id FROM webhook_deliveries ORDER BY created_at');
    const [old, recent, pending] = rows.map((row) => row.id);
    await pool.query(
      "UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL, updated_at = now() - interval '31 days' WHERE id = $1",
      [old],
    );
    await pool.query(
      "UPDATE webhook_deliveries SET status = 'succeeded', next_attempt_at = NULL, updated_at = now() - interval '29 days' WHERE id = $1",
      [recent],
    );
    await pool.query("UPDATE webhook_deliveries SET updated_at = now() - interval '60 days' WHERE id = $1", [pending]);
    expect(await dispatcher().sweep()).toBe(1);
    const left = await pool.query<{ id: string }>('SELECT id FROM webhook_deliveries ORDER BY created_at');
    expect(left.rows.map((row) => row.id)).toEqual([recent, pending]);
  });

  it('does not follow a redirect', async () => {
    const hook = await endpoint(tenantId);
    receiver.answer(302);
    await queueJobEvent(pool, terminal(await job(tenantId)));
    await dispatcher().runOnce();
    const [listed] = (await store.deliveries(tenantId, hook.id, 10, ALL_PRODUCTS)) ?? [];
    expect(listed?.attempts[0]).toMatchObject({ outcome: 'redirect_refused', http_status: 302 });
    expect(receiver.received).toHaveLength(1);
  });

  it('signs with both secrets for a day after a rotation', async () => {
    const hook = await endpoint(tenantId);
    const rotated = await store.rotateSecret(tenantId, hook.id, ALL_PRODUCTS);
    expect(rotated?.secret).not.toBe(hook.secret);
    expect(await store.rotateSecret(otherTenantId, hook.id, ALL_PRODUCTS)).toBeNull();
    await queueJobEvent(pool, terminal(await job(tenantId)));
    await dispatcher().runOnce();
    const [delivery] = await receiver.waitFor(1);
    expect(standardWebhooksProblem(hook.secret, delivery?.headers ?? {}, delivery?.body ?? '')).toBeNull();
    expect(standardWebhooksProblem(rotated?.secret ?? '', delivery?.headers ?? {}, delivery?.body ?? '')).toBeNull();
  });

  it('delivers a callback once per request URL, also when registered after the job finished', async () => {
    const callbackSecret = await store.rotateCallbackSecret(tenantId);
    const running = await job(tenantId, 'running');
    await registerCallback(pool, { tenantId, jobId: running, url: `${receiver.url}/a` });
    await registerCallback(pool, { tenantId, jobId: running, url: `${receiver.url}/b` });
    await registerCallback(pool, { tenantId, jobId: running, url: `${receiver.url}/a` });
    await pool.query("UPDATE jobs SET status = 'completed', result = '{\"news\": []}', finished_at = now() WHERE id = $1", [running]);
    expect(await queueJobEvent(pool, terminal(running))).toBe(2);
    const finished = await job(tenantId, 'failed');
    const spent = {
      model_calls: 1,
      input_tokens: 30,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
      output_tokens: 0,
      web_searches: 0,
    };
    const usage = { ...spent, failed_attempts: { attempts: 1, ...spent } };
    await pool.query('UPDATE jobs SET usage = $2 WHERE id = $1', [finished, usage]);
    await registerCallback(pool, { tenantId, jobId: finished, url: `${receiver.url}/late` });
    await dispatcher().runOnce();
    const received = await receiver.waitFor(3);
    expect(received.map((delivery) => delivery.path).sort()).toEqual(['/a', '/b', '/late']);
    for (const delivery of received) expect(standardWebhooksProblem(callbackSecret.secret, delivery.headers, delivery.body)).toBeNull();
    expect(JSON.parse(received.find((delivery) => delivery.path === '/late')?.body ?? '')).toMatchObject({
      type: 'job.failed',
      data: { job_id: finished, error: { type: 'internal_error' }, usage },
    });
  });

  it('queues deliveries from job events on the bus, as consumer group webhooks', async () => {
    const usage = {
      model_calls: 2,
      input_tokens: 40,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 1200,
      output_tokens: 9,
      web_searches: 1,
    };
    const bus: MemoryEventBus = createMemoryBus({ logger });
    try {
      await endpoint(tenantId);
      const made = dispatcher();
      const consumer = await startWebhookConsumer({ bus, pool, logger, onQueued: () => made.wake() });
      made.start();
      const jobId = await job(tenantId);
      const publisher = createPublisher(bus);
      await publisher.publish(jobsEventsTopic, jobId, { job_id: jobId, job_type: 'news', seq: 1001, status: 'running', progress: 5 });
      await publisher.publish(jobsEventsTopic, jobId, {
        job_id: jobId,
        job_type: 'news',
        seq: 1999,
        status: 'completed',
        progress: 100,
        result: { news: [] },
        usage,
      });
      const [delivery] = await receiver.waitFor(1);
      // The job's usage goes with the event (JobUsage; the two-field usage of older producers is left out).
      expect(JSON.parse(delivery?.body ?? '')).toMatchObject({ type: 'job.completed', data: { job_id: jobId, usage } });
      await consumer.stop();
    } finally {
      await bus.close();
    }
  });

  it('sends nothing for a disabled account, also what it had queued, until it is enabled again', async () => {
    const hook = await endpoint(tenantId);
    await queueJobEvent(pool, terminal(await job(tenantId)));
    await store.queueTest(tenantId, hook.id, ALL_PRODUCTS);
    await pool.query('UPDATE tenants SET disabled_at = now() WHERE id = $1', [tenantId]);
    try {
      // Queued before and after the account was disabled: neither is attempted.
      await store.queueTest(tenantId, hook.id, ALL_PRODUCTS);
      expect(await dispatcher().runOnce()).toBe(0);
      expect(receiver.received).toHaveLength(0);
      const [listed] = (await store.deliveries(tenantId, hook.id, 10, ALL_PRODUCTS)) ?? [];
      expect(listed).toMatchObject({ status: 'pending', attempt_count: 0 });
    } finally {
      await pool.query('UPDATE tenants SET disabled_at = NULL WHERE id = $1', [tenantId]);
    }
    expect(await dispatcher().runOnce()).toBe(3);
    await receiver.waitFor(3);
  });

  it('delivers job events to an endpoint only for the products its registering key may read', async () => {
    const everything = await endpoint(tenantId);
    const newsOnly = await store.create(
      tenantId,
      WebhookCreateRequest.parse({ url: `${receiver.url}/news` }),
      productsReadableWith(['news', 'webhooks']),
    );
    const noProduct = await store.create(
      tenantId,
      WebhookCreateRequest.parse({ url: `${receiver.url}/none` }),
      productsReadableWith(['webhooks']),
    );
    expect([everything.products, newsOnly.products, noProduct.products]).toEqual([['news', 'stock-report', 'analysis'], ['news'], []]);
    expect(await store.get(tenantId, noProduct.id)).toMatchObject({ products: [] });

    const report = randomUUID();
    await pool.query(
      `INSERT INTO jobs (id, tenant_id, type, status, request, result, finished_at) VALUES ($1, $2, 'stock-report', 'completed', '{}', '{"report": {}}', now())`,
      [report, tenantId],
    );
    expect(await queueJobEvent(pool, { ...terminal(report), jobType: 'stock-report', result: { report: {} } })).toBe(1);
    expect(await queueJobEvent(pool, terminal(await job(tenantId)))).toBe(2);
    await dispatcher().runOnce();
    const received = await receiver.waitFor(3);
    expect(
      received.map((delivery) => [delivery.path, (JSON.parse(delivery.body) as { data: { job_type: string } }).data.job_type]).sort(),
    ).toEqual([
      ['/hooks', 'news'],
      ['/hooks', 'stock-report'],
      ['/news', 'news'],
    ]);
    // A test event goes to any endpoint; a key that may read more widens the endpoint when it replaces it.
    await store.queueTest(tenantId, noProduct.id, ALL_PRODUCTS);
    expect(await dispatcher().runOnce()).toBe(1);
    const replaced = await store.update(tenantId, noProduct.id, WebhookCreateRequest.parse({ url: `${receiver.url}/none` }), ['analysis']);
    expect(replaced?.products).toEqual(['analysis']);
  });

  it('bounds the attempts in flight per endpoint and per account, across dispatchers, taking every account in turn', async () => {
    const stuckA = await store.create(tenantId, WebhookCreateRequest.parse({ url: `${hanging.url}/a` }), ALL_PRODUCTS);
    const stuckB = await store.create(tenantId, WebhookCreateRequest.parse({ url: `${hanging.url}/b` }), ALL_PRODUCTS);
    for (let i = 0; i < 5; i++) {
      await store.queueTest(tenantId, stuckA.id, ALL_PRODUCTS);
      await store.queueTest(tenantId, stuckB.id, ALL_PRODUCTS);
    }
    const other = await endpoint(otherTenantId);
    await store.queueTest(otherTenantId, other.id, ALL_PRODUCTS);
    const bounds = { perTargetConcurrency: 2, perTenantConcurrency: 3, timeoutMs: 1_000 };
    const first = dispatcher(bounds).runOnce();
    // The account's 3 (at most 2 to one endpoint) and the other account's one, in the same claim.
    await hanging.waitFor(3);
    await receiver.waitFor(1);
    const { rows } = await pool.query<{ endpoint_id: string; n: number }>(
      'SELECT endpoint_id, count(*)::int AS n FROM webhook_deliveries WHERE tenant_id = $1 AND lease_owner IS NOT NULL GROUP BY endpoint_id',
      [tenantId],
    );
    expect(rows.map((row) => row.n).sort()).toEqual([1, 2]);
    // Another dispatcher finds the account's slots taken while those attempts hang.
    expect(await dispatcher(bounds).runOnce()).toBe(0);
    expect(await first).toBe(4);
    expect(hanging.received).toHaveLength(3);
    // Each hanging attempt ended at its time limit, recorded as such, without holding the other account's.
    const { rows: outcomes } = await pool.query<{ outcome: string; n: number }>(
      'SELECT outcome, count(*)::int AS n FROM webhook_attempts GROUP BY outcome ORDER BY outcome',
    );
    expect(outcomes).toEqual([
      { outcome: 'ok', n: 1 },
      { outcome: 'timeout', n: 3 },
    ]);
  });

  it('sends one account at most hostAttemptsPerMinute attempts to one host; the rest wait for the next minute, unattempted', async () => {
    const hook = await endpoint(tenantId);
    const second = await store.create(tenantId, WebhookCreateRequest.parse({ url: `${receiver.url}/second` }), ALL_PRODUCTS);
    for (let i = 0; i < 3; i++) await store.queueTest(tenantId, hook.id, ALL_PRODUCTS);
    for (let i = 0; i < 2; i++) await store.queueTest(tenantId, second.id, ALL_PRODUCTS);
    const other = await endpoint(otherTenantId);
    await store.queueTest(otherTenantId, other.id, ALL_PRODUCTS);
    const limited = dispatcher({ hostAttemptsPerMinute: 3 });
    // 3 of the account's 5 (both endpoints are on one host), and the other account's own.
    expect(await limited.runOnce()).toBe(4);
    expect(await limited.runOnce()).toBe(0);
    expect(receiver.received).toHaveLength(4);
    const { rows } = await pool.query<{ attempt_count: number; waits_ms: number }>(
      `SELECT attempt_count, (extract(epoch FROM next_attempt_at - now()) * 1000)::float8 AS waits_ms
         FROM webhook_deliveries WHERE tenant_id = $1 AND status = 'pending'`,
      [tenantId],
    );
    expect(rows).toHaveLength(2);
    for (const row of rows) {
      expect(row.attempt_count).toBe(0);
      expect(row.waits_ms).toBeGreaterThan(30_000);
    }
  });

  it('disables an endpoint whose every attempt failed for 3 days, with the reason in the API, until it is enabled again', async () => {
    const hook = await endpoint(tenantId);
    receiver.answer(500, 500);
    await store.queueTest(tenantId, hook.id, ALL_PRODUCTS);
    await dispatcher().runOnce();
    const failing = await store.get(tenantId, hook.id);
    expect(failing).toMatchObject({ enabled: true, disabled_at: null, disabled_reason: null });
    expect(failing?.failing_since).not.toBeNull();

    // Three days of failures later, the next failure disables it.
    await pool.query("UPDATE webhook_endpoints SET failing_since = now() - interval '3 days 1 minute' WHERE id = $1", [hook.id]);
    await pool.query("UPDATE webhook_deliveries SET next_attempt_at = now() WHERE status = 'pending'");
    expect(await dispatcher().runOnce()).toBe(1);
    const disabled = await store.get(tenantId, hook.id);
    expect(disabled).toMatchObject({ enabled: false });
    expect(disabled?.disabled_at).not.toBeNull();
    expect(disabled?.disabled_reason).toMatch(
      /^Every delivery attempt failed for 3 days, since \d{4}-\d\d-\d\dT[\d:]{8}Z: disabled automatically\./,
    );

    // Nothing is sent to it now, not even a test.
    await store.queueTest(tenantId, hook.id, ALL_PRODUCTS);
    await pool.query("UPDATE webhook_deliveries SET next_attempt_at = now() WHERE status = 'pending'");
    expect(await dispatcher().runOnce()).toBe(0);

    // Enabled again: the reason and the failure record are cleared, and what waited is sent.
    const enabled = await store.update(tenantId, hook.id, WebhookCreateRequest.parse({ url: `${receiver.url}/hooks` }), ALL_PRODUCTS);
    expect(enabled).toMatchObject({ enabled: true, disabled_at: null, disabled_reason: null, failing_since: null });
    expect(await dispatcher().runOnce()).toBe(2);
    expect(await store.get(tenantId, hook.id)).toMatchObject({ failing_since: null, enabled: true });
  });

  it('records the account as the reason of an endpoint it disables, and a 2xx clears a failure record', async () => {
    const hook = await endpoint(tenantId);
    receiver.answer(500);
    await store.queueTest(tenantId, hook.id, ALL_PRODUCTS);
    await dispatcher().runOnce();
    expect((await store.get(tenantId, hook.id))?.failing_since).not.toBeNull();
    await pool.query("UPDATE webhook_deliveries SET next_attempt_at = now() WHERE status = 'pending'");
    await dispatcher().runOnce();
    expect((await store.get(tenantId, hook.id))?.failing_since).toBeNull();
    const off = await store.update(tenantId, hook.id, WebhookCreateRequest.parse({ url: hook.url, enabled: false }), ALL_PRODUCTS);
    expect(off).toMatchObject({ enabled: false, disabled_reason: 'Disabled by the account.' });
    expect(off?.disabled_at).not.toBeNull();
  });
});
