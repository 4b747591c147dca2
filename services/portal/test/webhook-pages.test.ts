// The portal's webhooks pages, as a browser uses them: register an endpoint (a problem shown for a bad URL, the
// secret shown once), see its deliveries with their attempts, send a test event, redeliver, delete; another
// account's endpoint is not found; a key without the webhooks scope is told so.
import { accountCounterKey } from '@fin/api-keys';
import { Browser, csrfOf } from './support/browser';
import { startHarness, type Harness } from './support/harness';

describe('the webhooks pages', () => {
  let h: Harness;
  let tenantId: string;

  beforeAll(async () => {
    h = await startHarness();
    tenantId = await h.tenant('acme');
  });

  afterAll(async () => {
    await h?.close();
  });

  async function signedIn(scopes?: string[], tenant = tenantId): Promise<{ browser: Browser; csrf: string }> {
    const browser = new Browser(h);
    const { apiKey } = await h.key(tenant, scopes);
    expect((await browser.signIn(apiKey)).status).toBe(303);
    const page = await browser.go('get', '/portal/tools');
    return { browser, csrf: csrfOf(page.text) };
  }

  it('registers an endpoint with its secret shown once, lists its deliveries, sends a test event, redelivers and deletes', async () => {
    const { browser, csrf } = await signedIn();
    const empty = await browser.go('get', '/portal/webhooks');
    expect(empty.status).toBe(200);
    expect(empty.text).toContain('No endpoints yet.');
    expect(empty.headers['content-security-policy']).toContain("script-src 'self'");

    const bad = await browser.go('post', '/portal/webhooks', { csrf, url: 'https://10.0.0.1/x', events: ['job.completed'] });
    expect(bad.text).toContain('url: 10.0.0.1 is not a public internet address');
    expect(bad.text).toContain('value="https://10.0.0.1/x"');
    const noEvents = await browser.go('post', '/portal/webhooks', { csrf, url: 'https://hooks.example.com/x' });
    expect(noEvents.text).toContain('events: must list at least one event type');

    const made = await browser.go('post', '/portal/webhooks', {
      csrf,
      url: 'https://hooks.example.com/<b>fin</b>',
      description: 'orders <script>',
      events: ['job.failed'],
    });
    expect(made.status).toBe(200);
    const secret = /<code id="new-secret">(whsec_[^<]+)<\/code>/.exec(made.text)?.[1];
    expect(secret).toMatch(/^whsec_/);
    expect(made.text).toContain('orders &lt;script&gt;');
    expect(made.text).not.toContain('<script>');
    const id = /data-webhook="([^"]+)"/.exec(made.text)?.[1] ?? '';
    const listed = await browser.go('get', '/portal/webhooks');
    expect(listed.text).toContain('job.failed');
    expect(listed.text).not.toContain(secret);

    expect((await browser.go('post', `/portal/webhooks/${id}/test`, { csrf })).headers.location).toBe(`/portal/webhooks/${id}`);
    const { rows } = await h.pool.query<{ id: string }>('SELECT id FROM webhook_deliveries WHERE endpoint_id = $1', [id]);
    const deliveryId = rows[0]?.id ?? '';
    await h.pool.query(
      "INSERT INTO webhook_attempts (delivery_id, outcome, http_status, duration_ms, error) VALUES ($1, 'http_error', 503, 41, 'the endpoint answered HTTP 503')",
      [deliveryId],
    );
    const deliveries = await browser.go('get', `/portal/webhooks/${id}`);
    expect(deliveries.status).toBe(200);
    expect(deliveries.text).toContain('webhook.test');
    expect(deliveries.text).toContain('http_error · HTTP 503 · 41 ms');
    expect(deliveries.text).toContain(`data-delivery="${deliveryId}"`);

    await h.pool.query("UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL WHERE id = $1", [deliveryId]);
    const redeliver = await browser.go('post', `/portal/webhooks/${id}/deliveries/${deliveryId}/redeliver`, { csrf });
    expect(redeliver.status).toBe(303);
    const { rows: after } = await h.pool.query<{ status: string }>('SELECT status FROM webhook_deliveries WHERE id = $1', [deliveryId]);
    expect(after[0]?.status).toBe('pending');

    // Forms need the session's token.
    expect((await browser.go('post', `/portal/webhooks/${id}/delete`, { csrf: 'forged' })).status).toBe(403);
    expect((await browser.go('post', `/portal/webhooks/${id}/delete`, { csrf })).headers.location).toBe('/portal/webhooks');
    expect((await browser.go('get', `/portal/webhooks/${id}`)).status).toBe(404);
  });

  it("shows another account's endpoint as not found, and tells a key without the webhooks scope what it lacks", async () => {
    const { browser, csrf } = await signedIn();
    const made = await browser.go('post', '/portal/webhooks', { csrf, url: 'https://hooks.example.com/acme', events: ['job.completed'] });
    const id = /data-webhook="([^"]+)"/.exec(made.text)?.[1] ?? '';
    const other = await signedIn(undefined, await h.tenant('globex'));
    expect((await other.browser.go('get', `/portal/webhooks/${id}`)).status).toBe(404);
    expect((await other.browser.go('post', `/portal/webhooks/${id}/delete`, { csrf: other.csrf })).status).toBe(404);
    expect((await other.browser.go('get', '/portal/webhooks')).text).not.toContain('hooks.example.com/acme');

    const toolsOnly = await signedIn(['tools']);
    const refused = await toolsOnly.browser.go('get', '/portal/webhooks');
    expect(refused.status).toBe(403);
    expect(refused.text).toContain('does not have the webhooks scope');
  });

  it('keeps a session within the products its key may read: their deliveries hidden, an endpoint receiving others not deleted or tested', async () => {
    const tenant = await h.tenant('split');
    const news = await signedIn(['tools', 'webhooks', 'news'], tenant);
    const made = await news.browser.go('post', '/portal/webhooks', {
      csrf: news.csrf,
      url: 'https://hooks.example.com/split',
      events: ['job.completed'],
    });
    const id = /data-webhook="([^"]+)"/.exec(made.text)?.[1] ?? '';
    const jobId = '0b7a3c9e-1d2f-4e5a-8b6c-7d8e9f0a1b2c';
    await h.pool.query("INSERT INTO jobs (id, tenant_id, type, request) VALUES ($1, $2, 'news', '{}')", [jobId, tenant]);
    const { rows } = await h.pool.query<{ id: string }>(
      `INSERT INTO webhook_deliveries (tenant_id, endpoint_id, event_key, event_type, job_id, job_type, body, give_up_at)
       VALUES ($1, $2, $3::text, 'job.completed', $3::uuid, 'news', '{}', now() + interval '1 day') RETURNING id`,
      [tenant, id, jobId],
    );
    const deliveryId = rows[0]?.id ?? '';
    expect((await news.browser.go('get', `/portal/webhooks/${id}`)).text).toContain(jobId);

    const hooksOnly = await signedIn(['tools', 'webhooks'], tenant);
    const page = await hooksOnly.browser.go('get', `/portal/webhooks/${id}`);
    expect(page.status).toBe(200);
    expect(page.text).not.toContain(jobId);
    for (const action of ['delete', 'test']) {
      const refused = await hooksOnly.browser.go('post', `/portal/webhooks/${id}/${action}`, { csrf: hooksOnly.csrf });
      expect(refused.status).toBe(403);
      expect(refused.text).toContain('This endpoint receives news results, which this API key may not read');
    }
    const redeliver = await hooksOnly.browser.go('post', `/portal/webhooks/${id}/deliveries/${deliveryId}/redeliver`, {
      csrf: hooksOnly.csrf,
    });
    expect(redeliver.status).toBe(404);
    const { rows: left } = await h.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = $1', [
      id,
    ]);
    expect(left[0]?.n).toBe(1);
  });

  it("counts a test event and a redelivery against the account's webhooks limit, in the counter the API's requests count in", async () => {
    const tenant = await h.tenant('limited');
    const { browser, csrf } = await signedIn(undefined, tenant);
    const made = await browser.go('post', '/portal/webhooks', {
      csrf,
      url: 'https://hooks.example.com/limited',
      events: ['job.completed'],
    });
    const id = /data-webhook="([^"]+)"/.exec(made.text)?.[1] ?? '';
    // The gateway's name of the account's webhooks counter (its rate-limit tests pin `<product>:tenant:<id>`).
    const counter = accountCounterKey('webhooks', tenant);
    expect(counter).toBe(`webhooks:tenant:${tenant}`);
    const hits = async () =>
      (await h.pool.query<{ hits: number }>('SELECT hits FROM rate_limit_counters WHERE counter_key = $1', [counter])).rows[0]?.hits;

    expect((await browser.go('post', `/portal/webhooks/${id}/test`, { csrf })).status).toBe(303);
    expect(await hits()).toBe(1);
    const { rows } = await h.pool.query<{ id: string }>('SELECT id FROM webhook_deliveries WHERE endpoint_id = $1', [id]);
    const deliveryId = rows[0]?.id ?? '';

    // The API's requests used the rest of the minute's 60: the page refuses as the API would, and queues nothing.
    await h.pool.query('UPDATE rate_limit_counters SET hits = 60 WHERE counter_key = $1', [counter]);
    const refused = await browser.go('post', `/portal/webhooks/${id}/test`, { csrf }, { Accept: 'text/html' });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect(refused.text).toContain('Rate limit exceeded: this account may make 60 webhook requests per minute');
    const redeliver = await browser.go('post', `/portal/webhooks/${id}/deliveries/${deliveryId}/redeliver`, { csrf });
    expect(redeliver.status).toBe(429);
    expect(redeliver.body).toMatchObject({ status_code: 429, type: 'rate_limit_exceeded' });
    const { rows: queued } = await h.pool.query('SELECT 1 FROM webhook_deliveries WHERE endpoint_id = $1', [id]);
    expect(queued).toHaveLength(1);

    // The account's override raises it here as it does in the gateway.
    await h.pool.query('UPDATE tenants SET rate_limit_overrides = \'{"webhooks": 100}\' WHERE id = $1', [tenant]);
    expect((await browser.go('post', `/portal/webhooks/${id}/test`, { csrf })).status).toBe(303);
  });

  it('shows the products an endpoint receives, and why it was disabled', async () => {
    const tenant = await h.tenant('narrow');
    const { browser, csrf } = await signedIn(['tools', 'webhooks', 'news'], tenant);
    const made = await browser.go('post', '/portal/webhooks', { csrf, url: 'https://hooks.example.com/narrow', events: ['job.completed'] });
    const id = /data-webhook="([^"]+)"/.exec(made.text)?.[1] ?? '';
    const { rows } = await h.pool.query<{ products: string[] }>('SELECT products FROM webhook_endpoints WHERE id = $1', [id]);
    expect(rows[0]?.products).toEqual(['news']);
    expect(made.text).toContain("the products this session's key may read (news)");

    const reason = 'Every delivery attempt failed for 3 days, since 2026-11-20T10:00:00Z: disabled automatically.';
    await h.pool.query('UPDATE webhook_endpoints SET enabled = false, disabled_at = now(), disabled_reason = $2 WHERE id = $1', [
      id,
      reason,
    ]);
    expect((await browser.go('get', '/portal/webhooks')).text).toContain(reason);
    const deliveries = await browser.go('get', `/portal/webhooks/${id}`);
    expect(deliveries.text).toContain('<strong>Disabled.</strong>');
    expect(deliveries.text).toContain(reason);
  });
});
