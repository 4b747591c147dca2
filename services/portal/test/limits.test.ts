// The portal's limits: the key cap (counted under a lock, usable keys only), key expiry, and the sign-in and
// test-call throttles per client address and per tenant.
import { ErrorBody } from '@fin/contracts';
import { Browser, csrfOf } from './support/browser';
import { startHarness, type Harness } from './support/harness';

describe('portal limits', () => {
  let h: Harness;

  beforeAll(async () => {
    h = await startHarness({ limits: { sign_in: { perClient: 3, perTenant: 4 }, test_call: { perClient: 2, perTenant: 4 } } });
  });

  afterAll(async () => {
    await h?.close();
  });

  beforeEach(async () => {
    await h.pool.query("DELETE FROM rate_limit_counters WHERE counter_key LIKE 'portal:%'");
  });

  async function signedIn(tenantId: string, address?: string): Promise<{ browser: Browser; csrf: string }> {
    const browser = new Browser(h, address);
    expect((await browser.signIn((await h.key(tenantId)).apiKey)).status).toBe(303);
    return { browser, csrf: csrfOf((await browser.go('get', '/portal/keys')).text) };
  }

  const usableKeys = async (tenantId: string) =>
    (
      (
        await h.pool.query(
          'SELECT count(*)::int AS n FROM api_keys WHERE tenant_id = $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())',
          [tenantId],
        )
      ).rows[0] as { n: number }
    ).n;

  describe('API keys', () => {
    it('gives a generated key an expiry (90 days by default) and lists it', async () => {
      const tenantId = await h.tenant('expiring');
      const { browser, csrf } = await signedIn(tenantId);
      const made = await browser.go('post', '/portal/keys', { csrf, name: 'nightly', scopes: ['news'] });
      expect(made.text).toMatch(/It expires on <time id="new-key-expires"/);
      const { rows } = await h.pool.query<{ days: number }>(
        "SELECT round(extract(epoch FROM expires_at - created_at) / 86400)::int AS days FROM api_keys WHERE name = 'nightly'",
      );
      expect(rows).toEqual([{ days: 90 }]);
      const listed = await browser.go('get', '/portal/keys');
      expect(listed.text).toContain('<th>Expires</th>');
      expect(listed.text).toContain('expire after 90 days');
    });

    it('counts only keys that can still be used toward the cap of 25: expired and revoked ones leave room', async () => {
      const tenantId = await h.tenant('crowded');
      const { browser, csrf } = await signedIn(tenantId);
      for (let index = 0; index < 24; index++) await h.key(tenantId);
      expect(await usableKeys(tenantId)).toBe(25);
      const full = await browser.go('post', '/portal/keys', { csrf, scopes: ['news'] });
      expect(full.text).toContain('already has 25 active keys');

      // One expires and one is revoked: two new keys fit, and no more.
      const { rows } = await h.pool.query<{ id: string }>(
        'SELECT id FROM api_keys WHERE tenant_id = $1 AND scopes = $2::text[] ORDER BY created_at DESC LIMIT 2',
        [tenantId, ['news', 'stock-report', 'analysis', 'chat', 'tools', 'webhooks']],
      );
      await h.pool.query("UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1", [rows[0]?.id]);
      await h.pool.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1', [rows[1]?.id]);
      expect((await browser.go('post', '/portal/keys', { csrf, scopes: ['news'] })).text).toContain('<code id="new-key">');
      expect((await browser.go('post', '/portal/keys', { csrf, scopes: ['news'] })).text).toContain('<code id="new-key">');
      expect((await browser.go('post', '/portal/keys', { csrf, scopes: ['news'] })).text).toContain('already has 25 active keys');
      expect(await usableKeys(tenantId)).toBe(25);
    });

    it('holds the cap under concurrent requests: 12 at once with room for 5 make exactly 5 keys', async () => {
      const tenantId = await h.tenant('racing');
      const { browser, csrf } = await signedIn(tenantId);
      for (let index = 0; index < 19; index++) await h.key(tenantId);
      expect(await usableKeys(tenantId)).toBe(20);
      const answers = await Promise.all(Array.from({ length: 12 }, () => browser.go('post', '/portal/keys', { csrf, scopes: ['news'] })));
      expect(answers.filter((res) => res.text.includes('<code id="new-key">'))).toHaveLength(5);
      expect(answers.filter((res) => res.text.includes('already has 25 active keys'))).toHaveLength(7);
      expect(await usableKeys(tenantId)).toBe(25);
    });
  });

  describe('sign-in throttle', () => {
    it('refuses the 4th attempt a minute from one address with 429, Retry-After and the error body; other addresses still sign in', async () => {
      const tenantId = await h.tenant('throttled-sign-in');
      const { apiKey } = await h.key(tenantId);
      const browser = new Browser(h, '198.51.100.7');
      const login = await browser.go('get', '/portal/login');
      for (let attempt = 0; attempt < 3; attempt++) {
        expect((await browser.go('post', '/portal/login', { csrf: csrfOf(login.text), api_key: 'fin_wrong' })).text).toContain(
          'Invalid API key.',
        );
      }
      const refused = await browser.go('post', '/portal/login', { csrf: csrfOf(login.text), api_key: apiKey });
      expect(refused.status).toBe(429);
      expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(ErrorBody.parse(refused.body)).toEqual({
        status_code: 429,
        type: 'rate_limit_exceeded',
        detail: expect.stringMatching(/^Too many sign-in attempts from this address: at most 3 per 60 s\. Retry in \d+ s\.$/),
      });
      expect(refused.headers['set-cookie']?.toString() ?? '').not.toContain('fin_portal_session=');

      // A browser asking for HTML gets a page saying the same.
      const page = await browser.go(
        'post',
        '/portal/login',
        { csrf: csrfOf(login.text), api_key: apiKey },
        { Accept: 'text/html,application/xhtml+xml,*/*;q=0.8' },
      );
      expect(page.status).toBe(429);
      expect(page.headers['content-type']).toMatch(/^text\/html/);
      expect(page.text).toContain('Too many sign-in attempts from this address');

      // The client's own X-Forwarded-For entries are not believed: only the one the gateway appended counts.
      const spoofing = new Browser(h, '192.0.2.1, 198.51.100.7');
      expect((await spoofing.signIn(apiKey)).status).toBe(429);
      expect((await new Browser(h, '198.51.100.8').signIn(apiKey)).status).toBe(303);
    });

    it('counts an IPv6 client by its /64, and refuses sign-ins to one tenant beyond its own limit from any address', async () => {
      const tenantId = await h.tenant('busy-tenant');
      const { apiKey } = await h.key(tenantId);
      for (const address of ['2001:db8:1:2::1', '2001:db8:1:2:ffff::2', '2001:0db8:0001:0002::3'])
        expect((await new Browser(h, address).signIn(apiKey)).status).toBe(303);
      expect((await new Browser(h, '2001:db8:1:2::4').signIn(apiKey)).status).toBe(429);
      // A 4th sign-in for the tenant from a fresh address passes; the 5th is over the tenant's 4.
      expect((await new Browser(h, '203.0.113.50').signIn(apiKey)).status).toBe(303);
      const overTenant = await new Browser(h, '203.0.113.51').signIn(apiKey);
      expect(overTenant.status).toBe(429);
      expect(ErrorBody.parse(overTenant.body).detail).toMatch(/^Too many sign-in attempts for this account: at most 4 per 60 s/);
    });
  });

  describe('test-call throttle', () => {
    it('calls the customer API at most 2 times a minute from one address and 4 for the tenant; refused calls never leave, but count', async () => {
      const tenantId = await h.tenant('tester');
      const { browser, csrf } = await signedIn(tenantId, '198.51.100.20');
      const { rows } = await h.pool.query<{ id: string }>(
        `INSERT INTO customer_tools (id, tenant_id, name, description, endpoint, method, input_schema, header_names, enabled, timeout_ms, products)
         VALUES (gen_random_uuid(), $1, 'probe', 'A probe.', 'https://127.0.0.1:9/', 'POST', '{"type":"object"}', '{}', true, 1000, '{news}') RETURNING id`,
        [tenantId],
      );
      const path = `/portal/tools/${rows[0]?.id ?? ''}/test`;
      const test = (who: Browser, token: string) => who.go('post', path, { csrf: token, input: '{}' });
      expect((await test(browser, csrf)).status).toBe(200);
      expect((await test(browser, csrf)).status).toBe(200);
      const refused = await test(browser, csrf);
      expect(refused.status).toBe(429);
      expect(ErrorBody.parse(refused.body).detail).toMatch(/^Too many test calls from this address: at most 2 per 60 s/);

      // The refused attempt counted for the tenant too (3 of its 4): another address gets one more call.
      const other = await signedIn(tenantId, '198.51.100.21');
      expect((await test(other.browser, other.csrf)).status).toBe(200);
      const overTenant = await test(other.browser, other.csrf);
      expect(overTenant.status).toBe(429);
      expect(ErrorBody.parse(overTenant.body).detail).toMatch(/^Too many test calls for this account: at most 4 per 60 s/);
      const calls = await h.pool.query('SELECT 1 FROM customer_tool_calls WHERE tool_id = $1', [rows[0]?.id]);
      expect(calls.rowCount).toBe(3);
    });
  });
});
