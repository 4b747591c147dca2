import { hashApiKey } from '@fin/api-keys';
import request from 'supertest';
import { CONTENT_SECURITY_POLICY } from '../src/web/routes';
import { Browser, csrfOf } from './support/browser';
import { startHarness, type Harness } from './support/harness';
import { replayMigration } from './support/migration';

/** Text as the portal's templates write it into a page. */
const escaped = (text: string) => text.replaceAll('"', '&quot;').replaceAll("'", '&#39;');

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

  // Issue 34: a customer tool named like one of the service's own tools made every run of its account fail.
  const reservedTool = {
    name: 'market_data',
    description: 'Our own market data.',
    endpoint: 'https://api.example.com/market',
    method: 'POST',
    input_schema: '{"type": "object"}',
    headers: '',
    timeout_ms: '5000',
    products: ['news'],
    enabled: 'on',
  };

  it("shows the name of one of the service's own tools as a problem of the name field, and stores nothing", async () => {
    const { browser, csrf } = await signedIn();
    const refused = await browser.go('post', '/portal/tools', { ...reservedTool, csrf });
    expect(refused.status).toBe(200);
    const problem = escaped(`name: "market_data" is reserved for the service's own tools: choose another name`);
    expect(refused.text).toContain(`<p class="field-error" id="name-error">${problem}</p>`);
    expect(refused.text).toContain(
      'id="name" name="name" value="market_data" autocomplete="off" spellcheck="false" aria-invalid="true" aria-describedby="name-error"',
    );
    expect((await h.pool.query("SELECT 1 FROM customer_tools WHERE name = 'market_data'")).rowCount).toBe(0);
  });

  it('shows why the migration disabled a tool; Enable is refused saying so, and renaming the tool enables it', async () => {
    const { browser, csrf } = await signedIn();
    const { rows } = await h.pool.query<{ id: string }>(
      `INSERT INTO customer_tools (tenant_id, name, description, endpoint, input_schema)
       VALUES ($1, 'market_data', 'Our own market data.', 'https://api.example.com/market', '{"type": "object"}') RETURNING id`,
      [tenantId],
    );
    const id = rows[0]?.id ?? '';
    await replayMigration(h.pool, '1764460800000_reserved-tool-names');
    const reason = escaped(
      `Disabled by the service: "market_data" is the name of one of the service's own tools, and the model cannot be offered two tools with one name (runs that offered this tool failed). Rename the tool to enable it again.`,
    );

    const list = await browser.go('get', '/portal/tools');
    const row = /<tr data-tool="market_data">[\s\S]*?<\/tr>/.exec(list.text)?.[0] ?? '';
    expect(row).toContain('<span class="badge off">disabled</span>');
    expect(row).toContain(`<div class="muted disabled-reason">${reason}</div>`);
    expect((await browser.go('get', `/portal/tools/${id}/edit`)).text).toContain(`<p class="note disabled-reason">${reason}</p>`);

    const enable = await browser.go('post', `/portal/tools/${id}/enabled`, { csrf, enabled: 'on' });
    expect(enable.status).toBe(200);
    expect(enable.text).toContain(
      `<li>${escaped(`name: "market_data" is reserved for the service's own tools: choose another name`)}</li>`,
    );
    expect((await h.pool.query('SELECT enabled FROM customer_tools WHERE id = $1', [id])).rows).toEqual([{ enabled: false }]);

    const kept = await browser.go('post', `/portal/tools/${id}`, { ...reservedTool, csrf });
    expect(kept.text).toContain('aria-describedby="name-error"');
    expect((await browser.go('post', `/portal/tools/${id}`, { ...reservedTool, csrf, name: 'our_market_data' })).status).toBe(303);
    expect((await h.pool.query('SELECT name, enabled, disabled_reason FROM customer_tools WHERE id = $1', [id])).rows).toEqual([
      { name: 'our_market_data', enabled: true, disabled_reason: null },
    ]);
    expect((await browser.go('get', '/portal/tools')).text).not.toContain('disabled-reason');
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
