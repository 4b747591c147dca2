import { offlineAnalyst } from '@fin/ai';
import {
  AsyncJobResponse,
  JobResultResponseByType,
  WebhookCreated,
  WebhookDelivery,
  WebhookDeliveryListResponse,
  WebhookEvent,
  WebhookSecretRotated,
} from '@fin/contracts';
import { testCertificate } from '@fin/customer-tools/testing';
import { startFakeAnthropic, startFakeFinnhub, type FakeAnthropic, type FakeFinnhub } from '@fin/fakes';
import { createTestDatabase, waitFor, type TestDatabase } from '@fin/testing';
import { standardWebhooksProblem, startFakeReceiver, type FakeReceiver } from '@fin/webhooks/testing';
import { sharedEnv, startSystem, type System } from '../src/system';

/**
 * Webhooks across the system, through the gateway: an endpoint registered with the portal service, a news job
 * run by its worker process, the terminal event read from Kafka by the jobs service (consumer group webhooks),
 * delivered by its dispatcher to a receiver over real HTTPS, signed as Standard Webhooks says, retried after the
 * receiver's 500s, every attempt listed, redelivered on request; a request's callback_url told once, signed with
 * the account's callback secret. The receiver lives on 127.0.0.1, which the jobs service may reach here only
 * because of CUSTOMER_TOOLS_ALLOW_LOOPBACK (test configuration).
 */
describe('webhooks on job completion', () => {
  let db: TestDatabase;
  let claude: FakeAnthropic;
  let finnhub: FakeFinnhub;
  let receiver: FakeReceiver;
  let system: System;
  let keyA: string;
  let keyB: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    receiver = await startFakeReceiver();
    claude = await startFakeAnthropic({ handler: offlineAnalyst() });
    finnhub = await startFakeFinnhub({ token: 'finnhub-e2e-token' });
    const env = {
      ...sharedEnv({ databaseUrl: db.url, anthropicUrl: claude.url, finnhubUrl: finnhub.apiBaseUrl, finnhubToken: 'finnhub-e2e-token' }),
      // Every process: the jobs service sends to the loopback receiver, the product APIs accept its callback_url.
      CUSTOMER_TOOLS_ALLOW_LOOPBACK: 'true',
      NODE_EXTRA_CA_CERTS: (await testCertificate()).certFile,
      WEBHOOK_RETRY_BASE_MS: '300',
      WEBHOOK_DISPATCH_INTERVAL_MS: '100',
    };
    system = await startSystem(env, {}, { products: ['portal', 'news'] });
    keyA = system.tenantKey('acme');
    keyB = system.tenantKey('globex');
  }, 120_000);

  afterAll(async () => {
    await system?.stop();
    await Promise.all([claude?.close(), finnhub?.close(), receiver?.close()]);
    await db?.drop();
  });

  const call = (path: string, key: string, init: RequestInit = {}) =>
    fetch(`${system.gatewayUrl}${path}`, { ...init, headers: { 'Content-Type': 'application/json', 'X-API-Key': key } });
  const post = (path: string, key: string, body?: unknown) =>
    call(path, key, { method: 'POST', ...(body === undefined ? {} : { body: JSON.stringify(body) }) });

  it('delivers a signed job.completed, retries after 500s, lists every attempt and redelivers', async () => {
    const created = await post('/api/webhooks/', keyA, { url: `${receiver.url}/hooks/acme`, description: 'e2e' });
    expect(created.status).toBe(201);
    const hook = WebhookCreated.parse(await created.json());
    // Another account neither sees the endpoint nor learns it exists.
    expect((await call(`/api/webhooks/${hook.id}`, keyB)).status).toBe(404);
    expect((await call(`/api/webhooks/${hook.id}/deliveries`, keyB)).status).toBe(404);

    receiver.answer(500, 500);
    const accepted = await post('/api/products/news', keyA, { symbols: ['AAPL'], n: 2 });
    expect(accepted.status).toBe(202);
    const job = AsyncJobResponse.parse(await accepted.json());
    const received = await receiver.waitFor(3, 60_000, (delivery) => delivery.path === '/hooks/acme');
    for (const delivery of received) expect(standardWebhooksProblem(hook.secret, delivery.headers, delivery.body)).toBeNull();
    expect(new Set(received.map((delivery) => delivery.headers['webhook-id'])).size).toBe(1);
    const event = WebhookEvent.parse(JSON.parse(received[0]?.body ?? ''));
    expect(event).toMatchObject({
      type: 'job.completed',
      data: { job_id: job.job_id, job_type: 'news', status: 'completed', status_url: job.status_url, result_url: job.result_url },
    });
    const result = JobResultResponseByType.news.parse(await (await call(job.result_url, keyA)).json());
    expect(event.data.result).toEqual(result.result);

    const deliveries = await waitFor(
      async () => {
        const listed = WebhookDeliveryListResponse.parse(await (await call(`/api/webhooks/${hook.id}/deliveries`, keyA)).json()).deliveries;
        return listed[0]?.status === 'succeeded' ? listed : undefined;
      },
      { what: 'the delivery to be recorded as succeeded' },
    );
    expect(deliveries).toHaveLength(1);
    expect(deliveries[0]).toMatchObject({
      id: received[0]?.headers['webhook-id'],
      job_id: job.job_id,
      attempt_count: 3,
      next_attempt_at: null,
    });
    expect(deliveries[0]?.attempts.map((attempt) => [attempt.outcome, attempt.http_status])).toEqual([
      ['ok', 204],
      ['http_error', 500],
      ['http_error', 500],
    ]);

    const again = await post(`/api/webhooks/${hook.id}/deliveries/${deliveries[0]?.id}/redeliver`, keyA);
    expect(again.status).toBe(202);
    expect(WebhookDelivery.parse(await again.json()).status).toBe('pending');
    const all = await receiver.waitFor(4, 30_000, (delivery) => delivery.path === '/hooks/acme');
    expect(all[3]?.headers['webhook-id']).toBe(deliveries[0]?.id);
    expect(all[3]?.body).toBe(received[0]?.body);
    // Another account cannot redeliver it.
    expect((await post(`/api/webhooks/${hook.id}/deliveries/${deliveries[0]?.id}/redeliver`, keyB)).status).toBe(404);

    const test = await post(`/api/webhooks/${hook.id}/test`, keyA);
    expect(test.status).toBe(202);
    const [ping] = await receiver.waitFor(1, 30_000, (delivery) => delivery.body.includes('"webhook.test"'));
    expect(standardWebhooksProblem(hook.secret, ping?.headers ?? {}, ping?.body ?? '')).toBeNull();
  }, 120_000);

  it("tells a request's callback_url once, signed with the account's callback secret", async () => {
    const refused = await post('/api/products/news', keyB, { symbols: ['MSFT'], callback_url: `${receiver.url}/cb/globex` });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { detail: string }).detail).toContain('callback_url: this account has no callback secret yet');

    const secret = WebhookSecretRotated.parse(await (await post('/api/webhooks/callback-secret', keyB)).json());
    const accepted = await post('/api/products/news', keyB, { symbols: ['MSFT', 'NVDA'], callback_url: `${receiver.url}/cb/globex` });
    expect(accepted.status).toBe(202);
    const job = AsyncJobResponse.parse(await accepted.json());
    const [delivery] = await receiver.waitFor(1, 60_000, (received) => received.path === '/cb/globex');
    expect(standardWebhooksProblem(secret.secret, delivery?.headers ?? {}, delivery?.body ?? '')).toBeNull();
    expect(WebhookEvent.parse(JSON.parse(delivery?.body ?? '')).data).toMatchObject({ job_id: job.job_id, status: 'completed' });
    // globex has no endpoint: acme's endpoint heard nothing of globex's job.
    expect(receiver.received.filter((received) => received.path === '/hooks/acme' && received.body.includes(job.job_id))).toEqual([]);
    // Once: no second delivery to the callback.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(receiver.received.filter((received) => received.path === '/cb/globex')).toHaveLength(1);

    // Listed among the account's callback deliveries, with its attempt, and redelivered on request.
    const listed = await waitFor(
      async () => {
        const answer = await call(`/api/webhooks/callbacks/deliveries?job_id=${job.job_id}`, keyB);
        expect(answer.status).toBe(200);
        const [only, ...more] = WebhookDeliveryListResponse.parse(await answer.json()).deliveries;
        return only?.status === 'succeeded' && more.length === 0 ? only : undefined;
      },
      { timeoutMs: 30_000, what: 'the callback delivery to be listed as succeeded' },
    );
    expect(listed).toMatchObject({
      id: delivery?.headers['webhook-id'],
      webhook_id: null,
      callback_url: `${receiver.url}/cb/globex`,
      job_id: job.job_id,
      event_type: 'job.completed',
      attempt_count: 1,
      attempts: [expect.objectContaining({ outcome: 'ok' })],
    });
    // Another account sees neither the delivery nor the job.
    expect((await call(`/api/webhooks/callbacks/deliveries?job_id=${job.job_id}`, keyA)).status).toBe(404);
    const theirs = WebhookDeliveryListResponse.parse(await (await call('/api/webhooks/callbacks/deliveries', keyA)).json());
    expect(theirs.deliveries.map((listedDelivery) => listedDelivery.id)).not.toContain(listed.id);
    expect((await post(`/api/webhooks/callbacks/deliveries/${listed.id}/redeliver`, keyA)).status).toBe(404);

    const again = await post(`/api/webhooks/callbacks/deliveries/${listed.id}/redeliver`, keyB);
    expect(again.status).toBe(202);
    expect(WebhookDelivery.parse(await again.json())).toMatchObject({ id: listed.id, status: 'pending' });
    const both = await receiver.waitFor(2, 30_000, (received) => received.path === '/cb/globex');
    expect(both[1]?.headers['webhook-id']).toBe(listed.id);
    expect(both[1]?.body).toBe(delivery?.body);
    expect(standardWebhooksProblem(secret.secret, both[1]?.headers ?? {}, both[1]?.body ?? '')).toBeNull();
  }, 120_000);

  it('refuses a private address: an IP literal at registration, a callback_url at the request', async () => {
    const registered = await post('/api/webhooks/', keyA, { url: 'https://169.254.169.254/latest/meta-data' });
    expect(registered.status).toBe(400);
    expect(((await registered.json()) as { detail: string }).detail).toContain('url: 169.254.169.254 is not a public internet address');
    await post('/api/webhooks/callback-secret', keyA);
    const request = await post('/api/products/news', keyA, { symbols: ['AAPL'], callback_url: 'https://10.0.0.1/cb' });
    expect(request.status).toBe(400);
  });
});
