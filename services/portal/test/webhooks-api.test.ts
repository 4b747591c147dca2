// The webhooks API as the gateway reaches it: endpoints, the secret shown once and sealed at rest, 400s naming
// the field, 404 for another tenant's endpoint, the scope checked again here, test events and redelivery queued
// for the dispatcher, the callback secret and the callback deliveries.
import {
  ErrorBody,
  Webhook,
  WebhookCreated,
  WebhookDelivery,
  WebhookDeliveryListResponse,
  WebhookListResponse,
  WebhookSecretRotated,
} from '@fin/contracts';
import { randomUUID } from 'node:crypto';
import { queueJobEvent } from '@fin/webhooks';
import request from 'supertest';
import { startHarness, type Harness } from './support/harness';

describe('the webhooks API', () => {
  let h: Harness;
  let acme: { tenantId: string; keyId: string };
  let globex: { tenantId: string; keyId: string };

  beforeAll(async () => {
    h = await startHarness();
    const a = await h.tenant('acme');
    const g = await h.tenant('globex');
    acme = { tenantId: a, keyId: (await h.key(a)).keyId };
    globex = { tenantId: g, keyId: (await h.key(g)).keyId };
  });

  afterAll(async () => {
    await h?.close();
  });

  beforeEach(async () => {
    await h.pool.query('DELETE FROM webhook_endpoints');
  });

  const call = (
    method: 'get' | 'post' | 'put' | 'delete',
    path: string,
    body?: unknown,
    caller: { tenantId: string; keyId: string; scopes?: string[] } | null = { ...acme, scopes: ['webhooks'] },
  ) => {
    const agent = request(h.app);
    const req = agent[method](path).set(h.signed(method.toUpperCase(), path, caller, body));
    return body === undefined ? req : req.send(body as object);
  };

  it('creates an endpoint with a secret shown once and stored sealed; reads, lists, replaces and deletes it', async () => {
    const created = await call('post', '/api/webhooks/', { url: 'https://hooks.example.com/fin', description: 'orders' });
    expect(created.status).toBe(201);
    const hook = WebhookCreated.parse(created.body);
    expect(hook).toMatchObject({
      url: 'https://hooks.example.com/fin',
      events: ['job.completed', 'job.failed'],
      enabled: true,
      description: 'orders',
    });
    expect(hook.secret).toMatch(/^whsec_/);
    expect(created.headers.location).toBe(`/api/webhooks/${hook.id}`);
    const { rows } = await h.pool.query<{ sealed: Buffer }>('SELECT secret_ciphertext AS sealed FROM webhook_endpoints');
    expect(rows[0]?.sealed.toString('latin1')).not.toContain(hook.secret.slice(6));

    const read = await call('get', `/api/webhooks/${hook.id}`);
    expect(read.status).toBe(200);
    expect(read.body).not.toHaveProperty('secret');
    const { secret: _secret, ...withoutSecret } = hook;
    expect(Webhook.parse(read.body)).toEqual(withoutSecret);
    expect(WebhookListResponse.parse((await call('get', '/api/webhooks/')).body).webhooks.map((w) => w.id)).toEqual([hook.id]);
    expect(JSON.stringify((await call('get', '/api/webhooks/')).body)).not.toContain(hook.secret);

    const replaced = await call('put', `/api/webhooks/${hook.id}`, {
      url: 'https://hooks.example.com/v2',
      events: ['job.failed'],
      enabled: false,
    });
    expect(replaced.status).toBe(200);
    expect(Webhook.parse(replaced.body)).toMatchObject({
      url: 'https://hooks.example.com/v2',
      events: ['job.failed'],
      enabled: false,
      description: '',
    });

    const rotated = await call('post', `/api/webhooks/${hook.id}/rotate-secret`);
    expect(rotated.status).toBe(200);
    expect(WebhookSecretRotated.parse(rotated.body).secret).not.toBe(hook.secret);

    expect((await call('delete', `/api/webhooks/${hook.id}`)).status).toBe(204);
    expect((await call('get', `/api/webhooks/${hook.id}`)).status).toBe(404);
  });

  it("narrows an endpoint to the products its registering key may read, visibly, and a replacing key's scopes replace them", async () => {
    const as = (scopes: string[]) => ({ ...acme, scopes });
    const webhooksOnly = Webhook.parse(
      (await call('post', '/api/webhooks/', { url: 'https://hooks.example.com/none' }, as(['webhooks']))).body,
    );
    expect(webhooksOnly.products).toEqual([]);
    const newsKey = Webhook.parse(
      (await call('post', '/api/webhooks/', { url: 'https://hooks.example.com/news' }, as(['webhooks', 'news', 'chat']))).body,
    );
    expect(newsKey.products).toEqual(['news']);
    expect(Webhook.parse((await call('get', `/api/webhooks/${newsKey.id}`)).body).products).toEqual(['news']);
    const widened = await call(
      'put',
      `/api/webhooks/${webhooksOnly.id}`,
      { url: 'https://hooks.example.com/none' },
      as(['webhooks', 'news', 'stock-report', 'analysis']),
    );
    expect(Webhook.parse(widened.body).products).toEqual(['news', 'stock-report', 'analysis']);

    // A stock-report job's event reaches only the endpoint that may read stock reports.
    const jobId = randomUUID();
    await h.pool.query(
      `INSERT INTO jobs (id, tenant_id, type, status, request, result, finished_at) VALUES ($1, $2, 'stock-report', 'completed', '{}', '{"report": {}}', now())`,
      [jobId, acme.tenantId],
    );
    const queued = await queueJobEvent(h.pool, {
      jobId,
      jobType: 'stock-report',
      status: 'completed',
      at: new Date(),
      result: { report: {} },
    });
    expect(queued).toBe(1);
    const { rows } = await h.pool.query<{ endpoint_id: string }>('SELECT endpoint_id FROM webhook_deliveries WHERE job_id = $1', [jobId]);
    expect(rows.map((row) => row.endpoint_id)).toEqual([webhooksOnly.id]);
  });

  // Issue 40, item 2: a key with only the webhooks scope read analysis results it gets 403 for directly, by listing
  // another key's endpoint's deliveries, pointing the endpoint at its own URL and redelivering.
  it('keeps a key within the products it may read: deliveries of others unlisted, endpoints receiving others not changed', async () => {
    const as = (scopes: string[]) => ({ ...acme, scopes });
    const everything = as(['webhooks', 'news', 'stock-report', 'analysis']);
    const webhooksOnly = as(['webhooks']);
    const newsOnly = as(['webhooks', 'news']);
    const hook = WebhookCreated.parse((await call('post', '/api/webhooks/', { url: 'https://hooks.example.com/all' }, everything)).body);
    const finished = async (type: 'news' | 'analysis', callbackUrl?: string) => {
      const jobId = randomUUID();
      await h.pool.query(
        `INSERT INTO jobs (id, tenant_id, type, status, request, result, finished_at) VALUES ($1, $2, $3, 'completed', '{}', '{"secret": "result"}', now())`,
        [jobId, acme.tenantId, type],
      );
      if (callbackUrl !== undefined)
        await h.pool.query('INSERT INTO webhook_callbacks (job_id, url, tenant_id) VALUES ($1, $2, $3)', [
          jobId,
          callbackUrl,
          acme.tenantId,
        ]);
      await queueJobEvent(h.pool, { jobId, jobType: type, status: 'completed', at: new Date(), result: { secret: 'result' } });
      return jobId;
    };
    const analysisJob = await finished('analysis', 'https://client.example.com/analysis');
    const newsJob = await finished('news');
    const deliveriesOf = async (path: string, caller: ReturnType<typeof as>) =>
      WebhookDeliveryListResponse.parse((await call('get', path, undefined, caller)).body).deliveries;
    const all = await deliveriesOf(`/api/webhooks/${hook.id}/deliveries`, everything);
    expect(all.map((d) => d.job_id).sort()).toEqual([analysisJob, newsJob].sort());
    const analysisDelivery = all.find((d) => d.job_id === analysisJob)?.id ?? '';
    const [callback] = await deliveriesOf('/api/webhooks/callbacks/deliveries', everything);
    expect(callback?.job_id).toBe(analysisJob);

    // The endpoint's settings are the account's to see; the deliveries listed are those of products the key may read.
    expect((await call('get', `/api/webhooks/${hook.id}`, undefined, webhooksOnly)).status).toBe(200);
    expect(await deliveriesOf(`/api/webhooks/${hook.id}/deliveries`, webhooksOnly)).toEqual([]);
    expect((await deliveriesOf(`/api/webhooks/${hook.id}/deliveries`, newsOnly)).map((d) => d.job_id)).toEqual([newsJob]);
    expect(await deliveriesOf('/api/webhooks/callbacks/deliveries', webhooksOnly)).toEqual([]);
    expect(await deliveriesOf(`/api/webhooks/callbacks/deliveries?job_id=${analysisJob}`, newsOnly)).toEqual([]);

    // Not redelivered, as not listed: the same 404 as a missing delivery.
    const redeliver = await call('post', `/api/webhooks/${hook.id}/deliveries/${analysisDelivery}/redeliver`, undefined, webhooksOnly);
    expect(redeliver.body).toEqual({ detail: 'No such delivery of this webhook endpoint.', status_code: 404, type: 'not_found' });
    expect((await call('post', `/api/webhooks/callbacks/deliveries/${callback?.id ?? ''}/redeliver`, undefined, newsOnly)).status).toBe(
      404,
    );

    // The endpoint receives analysis results: a key that may not read them cannot repoint, test, rotate or delete it.
    for (const [caller, missing] of [
      [webhooksOnly, 'news, stock-report and analysis'],
      [newsOnly, 'stock-report and analysis'],
    ] as const) {
      const answers = await Promise.all([
        call('put', `/api/webhooks/${hook.id}`, { url: 'https://attacker.example.net/' }, caller),
        call('post', `/api/webhooks/${hook.id}/test`, undefined, caller),
        call('post', `/api/webhooks/${hook.id}/rotate-secret`, undefined, caller),
        call('delete', `/api/webhooks/${hook.id}`, undefined, caller),
      ]);
      for (const res of answers) {
        expect(res.status).toBe(403);
        expect(ErrorBody.parse(res.body).detail).toContain(`receives ${missing} results, which this API key may not read`);
      }
    }
    const { rows } = await h.pool.query<{ url: string; products: string[]; tests: number; secret_rotated: boolean }>(
      `SELECT url, products, (SELECT count(*)::int FROM webhook_deliveries WHERE endpoint_id = e.id AND event_type = 'webhook.test') AS tests,
              previous_secret_ciphertext IS NOT NULL AS secret_rotated
         FROM webhook_endpoints e WHERE id = $1`,
      [hook.id],
    );
    expect(rows).toEqual([
      { url: 'https://hooks.example.com/all', products: ['news', 'stock-report', 'analysis'], tests: 0, secret_rotated: false },
    ]);

    // A key that may read all it receives moves it, and what was queued for it goes to the new URL.
    const moved = await call('put', `/api/webhooks/${hook.id}`, { url: 'https://hooks.example.com/moved' }, everything);
    expect(Webhook.parse(moved.body).url).toBe('https://hooks.example.com/moved');
    const { rows: queued } = await h.pool.query<{ url: string }>(
      "SELECT e.url FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id WHERE d.status = 'pending' AND d.endpoint_id = $1",
      [hook.id],
    );
    expect(queued.map((row) => row.url)).toEqual(['https://hooks.example.com/moved', 'https://hooks.example.com/moved']);
    expect((await call('post', `/api/webhooks/${hook.id}/deliveries/${analysisDelivery}/redeliver`, undefined, everything)).status).toBe(
      202,
    );
  });

  it('answers 400 naming the field for a bad URL, event or unknown field, and refuses private IP literals', async () => {
    const cases: [unknown, string][] = [
      [{ url: 'http://hooks.example.com/' }, 'url: must be an absolute https:// URL'],
      [{ url: 'https://user:pw@hooks.example.com/' }, 'url: must not contain a user name or password'],
      [{ url: 'https://hooks.example.com/', events: ['job.started'] }, 'events[0]: must be job.completed or job.failed, got "job.started"'],
      [{ url: 'https://hooks.example.com/', events: [] }, 'events: must list at least one event type'],
      [{ url: 'https://hooks.example.com/', secret: 'mine' }, 'unknown field "secret"'],
      [{ url: 'https://10.1.2.3/hook' }, 'url: 10.1.2.3 is not a public internet address'],
      [{ url: 'https://169.254.169.254/latest' }, 'url: 169.254.169.254 is not a public internet address'],
      [{ url: 'https://[fd00:ec2::254]/' }, 'url: fd00:ec2::254 is not a public internet address'],
    ];
    for (const [body, detail] of cases) {
      const res = await call('post', '/api/webhooks/', body);
      expect(res.status).toBe(400);
      expect(ErrorBody.parse(res.body)).toMatchObject({ type: 'validation_error', status_code: 400 });
      expect((res.body as ErrorBody).detail).toContain(detail);
    }
    expect(WebhookListResponse.parse((await call('get', '/api/webhooks/')).body).webhooks).toEqual([]);
  });

  it("answers another tenant's endpoint exactly like a missing one, on every route", async () => {
    const hook = WebhookCreated.parse((await call('post', '/api/webhooks/', { url: 'https://hooks.example.com/' })).body);
    const missing = '3fa85f64-5717-4562-b3fc-2c963f66afa6';
    const other = { ...globex, scopes: ['webhooks'] };
    for (const id of [hook.id, missing]) {
      const answers = await Promise.all([
        call('get', `/api/webhooks/${id}`, undefined, other),
        call('put', `/api/webhooks/${id}`, { url: 'https://evil.example.com/' }, other),
        call('delete', `/api/webhooks/${id}`, undefined, other),
        call('post', `/api/webhooks/${id}/rotate-secret`, undefined, other),
        call('post', `/api/webhooks/${id}/test`, undefined, other),
        call('get', `/api/webhooks/${id}/deliveries`, undefined, other),
      ]);
      for (const res of answers)
        expect(res.body).toEqual({ detail: 'No webhook endpoint with this id.', status_code: 404, type: 'not_found' });
    }
    expect(Webhook.parse((await call('get', `/api/webhooks/${hook.id}`)).body).url).toBe('https://hooks.example.com/');
  });

  it('checks the webhooks scope again behind the gateway', async () => {
    const res = await call('get', '/api/webhooks/', undefined, { ...acme, scopes: ['tools', 'news'] });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ detail: 'This API key does not have the webhooks scope.', status_code: 403, type: 'forbidden' });
    expect((await call('get', '/api/webhooks/', undefined, null)).status).toBe(401);
  });

  it('queues a test event, lists it with its attempts, and redelivers it', async () => {
    const hook = WebhookCreated.parse((await call('post', '/api/webhooks/', { url: 'https://hooks.example.com/' })).body);
    const queued = await call('post', `/api/webhooks/${hook.id}/test`);
    expect(queued.status).toBe(202);
    const test = WebhookDelivery.parse(queued.body);
    expect(test).toMatchObject({ webhook_id: hook.id, event_type: 'webhook.test', status: 'pending', attempt_count: 0, attempts: [] });
    // As the dispatcher records a failed attempt and gives up:
    await h.pool.query(
      `INSERT INTO webhook_attempts (delivery_id, outcome, http_status, duration_ms, error, response_excerpt) VALUES ($1, 'http_error', 500, 12, 'the endpoint answered HTTP 500', $2)`,
      [test.id, 'x'.repeat(1024)],
    );
    await h.pool.query("UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL, attempt_count = 1 WHERE id = $1", [
      test.id,
    ]);
    const listed = WebhookDeliveryListResponse.parse((await call('get', `/api/webhooks/${hook.id}/deliveries?limit=5`)).body).deliveries;
    expect(listed).toEqual([
      expect.objectContaining({
        id: test.id,
        status: 'failed',
        next_attempt_at: null,
        attempts: [
          expect.objectContaining({ outcome: 'http_error', http_status: 500, duration_ms: 12, response_excerpt: 'x'.repeat(1024) }),
        ],
      }),
    ]);
    expect((await call('get', `/api/webhooks/${hook.id}/deliveries?limit=0`)).body).toMatchObject({
      detail: expect.stringContaining('limit'),
    });

    const again = await call('post', `/api/webhooks/${hook.id}/deliveries/${test.id}/redeliver`);
    expect(again.status).toBe(202);
    expect(WebhookDelivery.parse(again.body)).toMatchObject({ id: test.id, status: 'pending' });
    // While an attempt holds it, a redelivery would race it.
    await h.pool.query("UPDATE webhook_deliveries SET lease_owner = 'd1', lease_expires_at = now() + interval '1 minute' WHERE id = $1", [
      test.id,
    ]);
    expect((await call('post', `/api/webhooks/${hook.id}/deliveries/${test.id}/redeliver`)).status).toBe(409);
    const other = { ...globex, scopes: ['webhooks'] };
    expect((await call('post', `/api/webhooks/${hook.id}/deliveries/${test.id}/redeliver`, undefined, other)).status).toBe(404);
  });

  it("lists the account's callback deliveries, one job's on request, and redelivers them; another account's are not found", async () => {
    await h.pool.query('DELETE FROM webhook_deliveries WHERE endpoint_id IS NULL');
    // A key that may read news, as the callbacks' product (see below for one that may not).
    const callNews = (
      method: Parameters<typeof call>[0],
      path: string,
      body?: unknown,
      caller = { ...acme, scopes: ['webhooks', 'news'] },
    ) => call(method, path, body, caller);
    const [jobA, jobB, theirJob] = [randomUUID(), randomUUID(), randomUUID()];
    for (const [tenantId, jobId] of [
      [acme.tenantId, jobA],
      [acme.tenantId, jobB],
      [globex.tenantId, theirJob],
    ] as const)
      await h.pool.query("INSERT INTO jobs (id, tenant_id, type, request) VALUES ($1, $2, 'news', '{}')", [jobId, tenantId]);
    const queueCallback = async (tenantId: string, jobId: string, url: string, createdAt: string) => {
      const { rows } = await h.pool.query<{ id: string }>(
        `INSERT INTO webhook_deliveries (tenant_id, callback_url, event_key, event_type, job_id, job_type, body, give_up_at, created_at)
         VALUES ($1, $2, $3::text, 'job.completed', $3::uuid, 'news', '{}', now() + interval '1 day', $4) RETURNING id`,
        [tenantId, url, jobId, createdAt],
      );
      return rows[0]?.id ?? '';
    };
    const older = await queueCallback(acme.tenantId, jobA, 'https://a.example.com/done', '2026-01-01T00:00:00Z');
    const newer = await queueCallback(acme.tenantId, jobB, 'https://b.example.com/done', '2026-01-02T00:00:00Z');
    const theirs = await queueCallback(globex.tenantId, theirJob, 'https://g.example.com/done', '2026-01-03T00:00:00Z');
    await h.pool.query(
      `INSERT INTO webhook_attempts (delivery_id, outcome, http_status, duration_ms, error) VALUES ($1, 'http_error', 503, 7, 'the endpoint answered HTTP 503')`,
      [older],
    );
    await h.pool.query("UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL, attempt_count = 1 WHERE id = $1", [older]);

    const listed = await callNews('get', '/api/webhooks/callbacks/deliveries');
    expect(listed.status).toBe(200);
    expect(WebhookDeliveryListResponse.parse(listed.body).deliveries).toEqual([
      expect.objectContaining({ id: newer, webhook_id: null, callback_url: 'https://b.example.com/done', job_id: jobB, attempts: [] }),
      expect.objectContaining({
        id: older,
        webhook_id: null,
        callback_url: 'https://a.example.com/done',
        job_id: jobA,
        status: 'failed',
        attempts: [expect.objectContaining({ outcome: 'http_error', http_status: 503, duration_ms: 7 })],
      }),
    ]);
    const oneJob = WebhookDeliveryListResponse.parse((await callNews('get', `/api/webhooks/callbacks/deliveries?job_id=${jobA}`)).body);
    expect(oneJob.deliveries.map((d) => d.id)).toEqual([older]);
    const limited = WebhookDeliveryListResponse.parse((await callNews('get', '/api/webhooks/callbacks/deliveries?limit=1')).body);
    expect(limited.deliveries.map((d) => d.id)).toEqual([newer]);
    // Another account's job is not found, exactly as one that does not exist.
    const theirJobAnswer = await callNews('get', `/api/webhooks/callbacks/deliveries?job_id=${theirJob}`);
    expect(theirJobAnswer.status).toBe(404);
    const missingJob = await callNews('get', `/api/webhooks/callbacks/deliveries?job_id=${randomUUID()}`);
    expect(missingJob.status).toBe(404);
    expect(ErrorBody.parse(missingJob.body).detail).toBe(ErrorBody.parse(theirJobAnswer.body).detail);
    const badQuery = await callNews('get', '/api/webhooks/callbacks/deliveries?job_id=nope');
    expect(badQuery.status).toBe(400);
    expect((badQuery.body as ErrorBody).detail).toContain('job_id');
    // An endpoint's deliveries are not callbacks, and the other account's callback is not listed.
    const hook = WebhookCreated.parse((await callNews('post', '/api/webhooks/', { url: 'https://hooks.example.com/' })).body);
    await callNews('post', `/api/webhooks/${hook.id}/test`);
    const ids = WebhookDeliveryListResponse.parse((await callNews('get', '/api/webhooks/callbacks/deliveries')).body).deliveries.map(
      (d) => d.id,
    );
    expect(ids).toEqual([newer, older]);

    const again = await callNews('post', `/api/webhooks/callbacks/deliveries/${older}/redeliver`);
    expect(again.status).toBe(202);
    expect(WebhookDelivery.parse(again.body)).toMatchObject({ id: older, status: 'pending', callback_url: 'https://a.example.com/done' });
    const { rows } = await h.pool.query<{ status: string }>('SELECT status FROM webhook_deliveries WHERE id = $1', [older]);
    expect(rows[0]?.status).toBe('pending');

    const other = { ...globex, scopes: ['webhooks'] };
    expect((await callNews('post', `/api/webhooks/callbacks/deliveries/${older}/redeliver`, undefined, other)).status).toBe(404);
    expect((await callNews('post', `/api/webhooks/callbacks/deliveries/${theirs}/redeliver`)).status).toBe(404);
    // An endpoint's delivery is not redelivered as a callback, nor a callback as an endpoint's.
    const [test] = WebhookDeliveryListResponse.parse((await callNews('get', `/api/webhooks/${hook.id}/deliveries`)).body).deliveries;
    expect((await callNews('post', `/api/webhooks/callbacks/deliveries/${test?.id ?? ''}/redeliver`)).status).toBe(404);
    expect((await callNews('post', `/api/webhooks/${hook.id}/deliveries/${older}/redeliver`)).status).toBe(404);
    const unknown = await callNews('post', `/api/webhooks/callbacks/deliveries/${randomUUID()}/redeliver`);
    expect(unknown.status).toBe(404);
    expect(ErrorBody.parse(unknown.body).detail).toBe('No such callback delivery.');
    const bad = await callNews('post', '/api/webhooks/callbacks/deliveries/not-a-uuid/redeliver');
    expect(bad.status).toBe(400);
    expect(ErrorBody.parse(bad.body).detail).toContain('delivery_id');
    expect((await callNews('get', '/api/webhooks/callbacks/deliveries', undefined, { ...acme, scopes: ['news'] })).status).toBe(403);
  });

  it('makes and rotates the callback secret, shown once each time', async () => {
    const first = WebhookSecretRotated.parse((await call('post', '/api/webhooks/callback-secret')).body);
    const second = WebhookSecretRotated.parse((await call('post', '/api/webhooks/callback-secret')).body);
    expect(second.secret).not.toBe(first.secret);
    const { rows } = await h.pool.query<{ previous: Buffer | null }>(
      'SELECT previous_secret_ciphertext AS previous FROM webhook_callback_secrets WHERE tenant_id = $1',
      [acme.tenantId],
    );
    expect(rows[0]?.previous).not.toBeNull();
  });

  it('sends every answer that holds a signing secret with Cache-Control: no-store, and others without', async () => {
    const created = await call('post', '/api/webhooks/', { url: 'https://hooks.example.com/fin' });
    expect(created.status).toBe(201);
    expect(created.headers['cache-control']).toBe('no-store');
    const { id } = WebhookCreated.parse(created.body);
    const rotated = await call('post', `/api/webhooks/${id}/rotate-secret`);
    expect(rotated.status).toBe(200);
    expect(rotated.headers['cache-control']).toBe('no-store');
    const callback = await call('post', '/api/webhooks/callback-secret');
    expect(callback.status).toBe(200);
    expect(callback.headers['cache-control']).toBe('no-store');
    const read = await call('get', `/api/webhooks/${id}`);
    expect(read.headers['cache-control']).toBeUndefined();
  });

  it('caps the endpoints of an account at 20', async () => {
    for (let i = 0; i < 20; i++) expect((await call('post', '/api/webhooks/', { url: `https://hooks.example.com/${i}` })).status).toBe(201);
    const over = await call('post', '/api/webhooks/', { url: 'https://hooks.example.com/21' });
    expect(over.status).toBe(409);
    expect((over.body as ErrorBody).detail).toContain('20 webhook endpoints');
  });
});
