import { hashApiKey } from '@fin/api-keys';
import request from 'supertest';
import { CONTENT_SECURITY_POLICY } from '../src/web/routes';
import { Browser, csrfOf } from './support/browser';
import { startHarness, type Harness } from './support/harness';

describe('the web portal', () => {
  let h: Harness;
  let tenantId: string;
  let apiKey: string;

  beforeAll(async () => {
    h = await startHarness();
    tenantId = await h.tenant('acme');
    ({ apiKey } = await h.key(tenantId));
  });

  afterAll(async () => {
    await h?.close();
  });

  async function signedIn(): Promise<{ browser: Browser; csrf: string }> {
    const browser = new Browser(h);
    const login = await browser.go('get', '/portal/login');
    const res = await browser.go('post', '/portal/login', { csrf: csrfOf(login.text), api_key: apiKey });
    expect(res.status).toBe(303);
    const tools = await browser.go('get', '/portal/tools');
    return { browser, csrf: csrfOf(tools.text) };
  }

  it('signs in with an API key into an httpOnly, Secure, SameSite=Strict session cookie scoped to /portal', async () => {
    const browser = new Browser(h);
    expect((await browser.go('get', '/portal/tools')).headers.location).toBe('/portal/login');
    const login = await browser.go('get', '/portal/login');
    expect(login.status).toBe(200);
    const res = await browser.go('post', '/portal/login', { csrf: csrfOf(login.text), api_key: apiKey });
    expect(res.status).toBe(303);
    expect(res.headers.location).toBe('/portal/tools');
    const cookie = ((res.headers['set-cookie'] as unknown as string[]) ?? []).find((line) => line.startsWith('fin_portal_session='));
    expect(cookie).toMatch(/; Path=\/portal/);
    expect(cookie).toMatch(/; HttpOnly/);
    expect(cookie).toMatch(/; Secure/);
    expect(cookie).toMatch(/; SameSite=Strict/);
    expect(cookie).not.toContain(apiKey);
    const tools = await browser.go('get', '/portal/tools');
    expect(tools.status).toBe(200);
    expect(tools.text).toContain('Your tools');
  });

  it('refuses a wrong key, a key without the tools scope, and a sign-in without the form token', async () => {
    const browser = new Browser(h);
    const login = await browser.go('get', '/portal/login');
    const wrong = await browser.go('post', '/portal/login', { csrf: csrfOf(login.text), api_key: 'fin_notakey' });
    expect(wrong.text).toContain('Invalid API key.');
    const { apiKey: newsOnly } = await h.key(tenantId, ['news']);
    expect((await browser.go('post', '/portal/login', { csrf: csrfOf(login.text), api_key: newsOnly })).text).toContain(
      'does not have the tools scope',
    );
    const forged = await new Browser(h).go('post', '/portal/login', { csrf: 'forged-token-forged-token', api_key: apiKey });
    expect(forged.status).toBe(403);
    expect(forged.headers['set-cookie']?.toString() ?? '').not.toContain('fin_portal_session=');
  });

  it('sends a strict CSP, no framing, no caching and no cross-origin referrer on every page', async () => {
    const { browser } = await signedIn();
    for (const path of ['/portal/login', '/portal/tools', '/portal/tools/new', '/portal/keys']) {
      const res = await browser.go('get', path);
      expect(res.headers['content-security-policy']).toBe(CONTENT_SECURITY_POLICY);
      expect(res.headers['content-security-policy']).not.toMatch(/unsafe-inline|unsafe-eval/);
      expect(res.headers['x-frame-options']).toBe('DENY');
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.headers['referrer-policy']).toBe('same-origin');
      expect(res.text).not.toMatch(/<script(?![^>]*\bsrc="\/portal\/static\/portal\.js")/);
    }
  });

  it('shows field-by-field problems for a bad schema, then creates the tool, escaping what the customer typed', async () => {
    const { browser, csrf } = await signedIn();
    const form = {
      csrf,
      name: 'get_positions',
      description: '<script>alert("x")</script> & positions',
      endpoint: 'https://api.example.com/positions',
      method: 'POST',
      input_schema: '{"type": "object", "properties": {"account": {"type": "strnig"}}}',
      headers: 'Authorization: Bearer portal-secret-1',
      timeout_ms: '5000',
      products: ['news', 'analysis'],
      enabled: 'on',
    };
    const bad = await browser.go('post', '/portal/tools', form);
    expect(bad.status).toBe(200);
    expect(bad.text).toContain('input_schema.properties.account.type: must be equal to one of the allowed values');
    expect(bad.text).toContain('aria-invalid="true" aria-describedby="input_schema-error"');
    expect(bad.text).not.toContain('portal-secret-1');
    const notJson = await browser.go('post', '/portal/tools', { ...form, input_schema: '{type: object}' });
    expect(notJson.text).toMatch(/input_schema: is not valid JSON/);

    const good = await browser.go('post', '/portal/tools', {
      ...form,
      input_schema: '{"type": "object", "properties": {"account": {"type": "string"}}}',
    });
    expect(good.status).toBe(303);
    const list = await browser.go('get', '/portal/tools');
    expect(list.text).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; positions');
    expect(list.text).not.toContain('<script>alert');
    expect(list.text).toContain('headers: Authorization');
    expect(list.text).not.toContain('portal-secret-1');
    const { rows } = await h.pool.query<{ products: string[]; timeout_ms: number }>(
      "SELECT products, timeout_ms FROM customer_tools WHERE name = 'get_positions'",
    );
    expect(rows[0]).toEqual({ products: ['news', 'analysis'], timeout_ms: 5000 });
  });

  it('an edit that moves the endpoint to another origin with the headers box empty asks for the headers again', async () => {
    const { browser, csrf } = await signedIn();
    const form = {
      csrf,
      name: 'moving_tool',
      description: 'Moves.',
      endpoint: 'https://api.example.com/positions',
      method: 'POST',
      input_schema: '{"type": "object"}',
      headers: 'Authorization: Bearer moving-secret',
      timeout_ms: '5000',
      products: ['news'],
      enabled: 'on',
    };
    expect((await browser.go('post', '/portal/tools', form)).status).toBe(303);
    const { rows } = await h.pool.query<{ id: string }>("SELECT id FROM customer_tools WHERE name = 'moving_tool'");
    const action = `/portal/tools/${rows[0]?.id ?? ''}`;

    const moved = await browser.go('post', action, { ...form, endpoint: 'https://collector.evil.example/positions', headers: '' });
    expect(moved.status).toBe(200);
    expect(moved.text).toContain('headers: the endpoint moves to another origin, and stored header values are never sent there');
    expect(moved.text).toContain('aria-invalid="true" aria-describedby="headers-error"');
    const stored = await h.pool.query("SELECT endpoint, header_names FROM customer_tools WHERE name = 'moving_tool'");
    expect(stored.rows[0]).toEqual({ endpoint: 'https://api.example.com/positions', header_names: ['Authorization'] });

    // Ticking "remove all stored headers", or typing new ones, moves it; the same origin keeps them without asking.
    expect((await browser.go('post', action, { ...form, endpoint: 'https://api.example.com/v2', headers: '' })).status).toBe(303);
    expect(
      (await browser.go('post', action, { ...form, endpoint: 'https://other.example.com/p', headers: '', clear_headers: 'on' })).status,
    ).toBe(303);
    const moved2 = await h.pool.query("SELECT endpoint, header_names FROM customer_tools WHERE name = 'moving_tool'");
    expect(moved2.rows[0]).toEqual({ endpoint: 'https://other.example.com/p', header_names: [] });
  });

  it("refuses form posts without the session's CSRF token, or from another site", async () => {
    const { browser, csrf } = await signedIn();
    const before = (await h.pool.query('SELECT count(*)::int AS n FROM customer_tools')).rows[0] as { n: number };
    const form = {
      name: 'x_tool',
      description: 'd',
      endpoint: 'https://api.example.com/',
      method: 'POST',
      input_schema: '{"type":"object"}',
      timeout_ms: '1000',
      products: 'news',
    };
    expect((await browser.go('post', '/portal/tools', form)).status).toBe(403);
    expect((await browser.go('post', '/portal/tools', { ...form, csrf: `${csrf}x` })).status).toBe(403);
    expect((await browser.go('post', '/portal/tools', { ...form, csrf }, { Origin: 'https://evil.example' })).status).toBe(403);
    expect((await browser.go('post', '/portal/tools', { ...form, csrf }, { 'Sec-Fetch-Site': 'cross-site' })).status).toBe(403);
    expect((await h.pool.query('SELECT count(*)::int AS n FROM customer_tools')).rows[0]).toEqual(before);
  });

  it("generates a key shown once (only its hash stored), within the signed-in key's scopes, and revokes keys", async () => {
    const { browser, csrf } = await signedIn();
    const made = await browser.go('post', '/portal/keys', { csrf, name: 'reporting <b>job</b>', scopes: ['news', 'tools'] });
    expect(made.status).toBe(200);
    expect(made.headers['cache-control']).toBe('no-store');
    const key = /<code id="new-key">(fin_[0-9A-Za-z]{42})<\/code>/.exec(made.text)?.[1] ?? '';
    expect(key).not.toBe('');
    expect(made.text).toContain('reporting &lt;b&gt;job&lt;/b&gt;');
    const { rows } = await h.pool.query<{ key_hash: Buffer; scopes: string[]; id: string }>(
      "SELECT id, key_hash, scopes FROM api_keys WHERE name = 'reporting <b>job</b>'",
    );
    expect(rows[0]?.key_hash.equals(hashApiKey(key))).toBe(true);
    expect(rows[0]?.scopes).toEqual(['news', 'tools']);
    const again = await browser.go('get', '/portal/keys');
    expect(again.text).not.toContain(key);
    expect(again.text).toContain(key.slice(0, 10));

    // A key limited to tools cannot mint a key for more.
    const narrow = new Browser(h);
    const login = await narrow.go('get', '/portal/login');
    await narrow.go('post', '/portal/login', { csrf: csrfOf(login.text), api_key: (await h.key(tenantId, ['tools'])).apiKey });
    const narrowCsrf = csrfOf((await narrow.go('get', '/portal/keys')).text);
    const escalate = await narrow.go('post', '/portal/keys', { csrf: narrowCsrf, scopes: ['news'] });
    expect(escalate.text).toContain('scopes: your key does not have news');

    const revoked = await browser.go('post', `/portal/keys/${rows[0]?.id ?? ''}/revoke`, { csrf });
    expect(revoked.status).toBe(303);
    expect(
      (await h.pool.query<{ revoked_at: Date | null }>('SELECT revoked_at FROM api_keys WHERE id = $1', [rows[0]?.id])).rows[0]?.revoked_at,
    ).not.toBeNull();
  });

  it('revoking the key a session was made from ends the session', async () => {
    const { apiKey: own, keyId } = await h.key(tenantId);
    const browser = new Browser(h);
    const login = await browser.go('get', '/portal/login');
    await browser.go('post', '/portal/login', { csrf: csrfOf(login.text), api_key: own });
    expect((await browser.go('get', '/portal/tools')).status).toBe(200);
    await h.pool.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1', [keyId]);
    const after = await browser.go('get', '/portal/tools');
    expect(after.status).toBe(303);
    expect(after.headers.location).toBe('/portal/login');
  });

  it('refuses page requests that did not come through the gateway', async () => {
    expect((await request(h.app).get('/portal/tools')).status).toBe(401);
  });
});
