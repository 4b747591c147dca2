import { CustomerTool, CustomerToolCallListResponse, CustomerToolListResponse, ErrorBody } from '@fin/contracts';
import { hasIpv6Loopback, startCanary, type Canary } from '@fin/customer-tools/testing';
import { createTestDatabase, type TestDatabase } from '@fin/testing';
import pg from 'pg';
import { sharedEnv, startSystem, type System } from '../src/system';

/**
 * Customer tools through the whole system: gateway → portal (a process of its own, on a database of the test's
 * own), with API keys made by the admin CLI. The portal runs as in production: loopback targets are NOT allowed.
 * Calls are made by the portal's test button, through the gateway's /portal pass-through and a cookie session,
 * with the same executor product workers use.
 */
describe('customer tools through the gateway', () => {
  let db: TestDatabase;
  let system: System;
  let keyA: string;
  let keyB: string;
  let canary: Canary;
  let canary6: Canary | undefined;

  const tool = {
    name: 'get_positions',
    description: 'Positions of a client account.',
    endpoint: 'https://api.example.com/positions',
    method: 'POST',
    input_schema: { type: 'object', properties: { account: { type: 'string' } }, required: ['account'] },
    headers: { Authorization: 'Bearer e2e-customer-secret' },
    products: ['news', 'analysis'],
  };

  beforeAll(async () => {
    db = await createTestDatabase();
    canary = await startCanary('127.0.0.1');
    if (await hasIpv6Loopback()) canary6 = await startCanary('::1');
    // No model and no market data are needed here: the addresses only have to be well-formed.
    const env = sharedEnv({
      databaseUrl: db.url,
      anthropicUrl: 'http://127.0.0.1:9',
      finnhubUrl: 'http://127.0.0.1:9',
      finnhubToken: 'unused-token',
    });
    system = await startSystem(env, {}, { products: ['portal'] });
    keyA = system.tenantKey('acme');
    keyB = system.tenantKey('globex');
    for (const tenant of ['acme', 'globex'])
      system.admin(['limits', 'set', '--tenant', tenant, '--product', 'tools', '--per-minute', '100000']);
  }, 120_000);

  afterAll(async () => {
    await system?.stop();
    await Promise.all([canary?.close(), canary6?.close()]);
    await db?.drop();
  });

  async function api(method: string, path: string, { key = keyA, body }: { key?: string; body?: unknown } = {}) {
    const res = await fetch(`${system.gatewayUrl}${path}`, {
      method,
      headers: { 'X-API-Key': key, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { res, text, body: text === '' ? undefined : (JSON.parse(text) as unknown) };
  }

  it('creates, lists, reads, replaces and deletes a tool; header values never come back', async () => {
    const created = await api('POST', '/api/customer-tools/', { body: tool });
    expect(created.res.status).toBe(201);
    const record = CustomerTool.parse(created.body);
    expect(record).toMatchObject({ name: 'get_positions', header_names: ['Authorization'], products: ['news', 'analysis'], enabled: true });
    expect(created.res.headers.get('x-ratelimit-limit')).toBe('100000');

    const list = await api('GET', '/api/customer-tools/');
    expect(CustomerToolListResponse.parse(list.body).tools.map((t) => t.id)).toContain(record.id);
    const read = await api('GET', `/api/customer-tools/${record.id}`);
    expect(CustomerTool.parse(read.body)).toEqual(record);
    const replaced = await api('PUT', `/api/customer-tools/${record.id}`, { body: { ...tool, headers: undefined, enabled: false } });
    expect(CustomerTool.parse(replaced.body)).toMatchObject({ enabled: false, header_names: ['Authorization'] });
    for (const response of [created, list, read, replaced]) expect(response.text).not.toContain('e2e-customer-secret');

    // At rest the header value is ciphertext only.
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      const { rows } = await client.query<{ headers_ciphertext: Buffer }>('SELECT headers_ciphertext FROM customer_tools WHERE id = $1', [
        record.id,
      ]);
      expect(rows[0]?.headers_ciphertext.toString('latin1')).not.toContain('e2e-customer-secret');
    } finally {
      await client.end();
    }

    expect((await api('DELETE', `/api/customer-tools/${record.id}`)).res.status).toBe(204);
    expect((await api('GET', `/api/customer-tools/${record.id}`)).res.status).toBe(404);
  });

  it('answers invalid payloads with 400 naming the field, and a duplicate name with 409', async () => {
    const cases: [unknown, RegExp][] = [
      [{ ...tool, input_schema: { type: 'object', properties: { n: { type: 'numbr' } } } }, /^input_schema\.properties\.n\.type: /],
      [{ ...tool, input_schema: { type: 'object', required: 'n' } }, /^input_schema\.required: must be array/],
      [{ ...tool, name: 'drop table' }, /^name: /],
      [{ ...tool, name: 'web_search' }, /^name: "web_search" is reserved for the service's own tools: choose another name$/],
      [{ ...tool, endpoint: 'http://api.example.com' }, /^endpoint: must be an absolute https:\/\/ URL/],
      [{ ...tool, products: ['news', 'crypto'] }, /^products\[1\]: must be one of/],
      [{ ...tool, headers: { 'X-Key': 'a\r\nInjected: 1' } }, /^headers\["X-Key"\]: must not contain line breaks/],
      [{ ...tool, timeout_ms: 60_000 }, /^timeout_ms: must be at most 30000/],
    ];
    for (const [body, detail] of cases) {
      const res = await api('POST', '/api/customer-tools/', { body });
      expect({ status: res.res.status, body: ErrorBody.parse(res.body) }).toEqual({
        status: 400,
        body: { status_code: 400, type: 'validation_error', detail: expect.stringMatching(detail) },
      });
    }
    const first = await api('POST', '/api/customer-tools/', { body: { ...tool, name: 'unique_one' } });
    expect(first.res.status).toBe(201);
    const again = await api('POST', '/api/customer-tools/', { body: { ...tool, name: 'unique_one' } });
    expect(again.res.status).toBe(409);
    expect(ErrorBody.parse(again.body)).toEqual({
      status_code: 409,
      type: 'conflict',
      detail: 'name: a tool named "unique_one" already exists',
    });
  });

  it("another tenant's tool is indistinguishable from a missing one (404)", async () => {
    const mine = CustomerTool.parse((await api('POST', '/api/customer-tools/', { body: { ...tool, name: 'private_tool' } })).body);
    const missing = await api('GET', '/api/customer-tools/00000000-0000-4000-8000-000000000000', { key: keyB });
    for (const [method, path, body] of [
      ['GET', `/api/customer-tools/${mine.id}`],
      ['PUT', `/api/customer-tools/${mine.id}`, tool],
      ['DELETE', `/api/customer-tools/${mine.id}`],
      ['GET', `/api/customer-tools/${mine.id}/calls`],
    ] as const) {
      const res = await api(method, path, { key: keyB, body });
      expect({ method, status: res.res.status, body: res.body }).toEqual({ method, status: 404, body: missing.body });
    }
    expect(
      CustomerToolListResponse.parse((await api('GET', '/api/customer-tools/', { key: keyB })).body).tools.map((t) => t.name),
    ).not.toContain('private_tool');
    expect((await api('GET', `/api/customer-tools/${mine.id}`)).res.status).toBe(200);
  });

  /** A cookie session of the portal, through the gateway, as a browser would hold it. */
  async function portalSession(apiKey: string) {
    const cookies = new Map<string, string>();
    const go = async (method: 'GET' | 'POST', path: string, form?: Record<string, string>) => {
      const res = await fetch(`${system.gatewayUrl}${path}`, {
        method,
        redirect: 'manual',
        headers: {
          Cookie: [...cookies].map(([name, value]) => `${name}=${value}`).join('; '),
          ...(form === undefined ? {} : { 'Content-Type': 'application/x-www-form-urlencoded' }),
        },
        body: form === undefined ? undefined : new URLSearchParams(form).toString(),
      });
      for (const line of res.headers.getSetCookie()) {
        const [pair] = line.split(';');
        const index = pair?.indexOf('=') ?? -1;
        if (pair !== undefined && index > 0) cookies.set(pair.slice(0, index), pair.slice(index + 1));
      }
      return { res, html: await res.text() };
    };
    const csrf = (html: string) => /name="csrf" value="([^"]+)"/.exec(html)?.[1] ?? '';
    const login = await go('GET', '/portal/login');
    expect(login.res.headers.get('content-security-policy')).toMatch(/script-src 'self'/);
    const signedIn = await go('POST', '/portal/login', { csrf: csrf(login.html), api_key: apiKey });
    expect(signedIn.res.status).toBe(303);
    expect(signedIn.res.headers.getSetCookie().join('\n')).toMatch(/fin_portal_session=[^;]+; .*HttpOnly.*SameSite=Strict/);
    return {
      async test(toolId: string, input: unknown) {
        const form = await go('GET', `/portal/tools/${toolId}/test`);
        expect(form.res.status).toBe(200);
        return go('POST', `/portal/tools/${toolId}/test`, { csrf: csrf(form.html), input: JSON.stringify(input) });
      },
    };
  }

  it('never connects to loopback, private, link-local, metadata or mapped addresses, however they are written', async () => {
    const port = canary.port;
    const targets = [
      `https://127.0.0.1:${port}/`,
      'https://10.0.0.1/',
      'https://169.254.169.254/latest/meta-data/',
      `https://[::1]:${canary6?.port ?? port}/`,
      `https://[::ffff:127.0.0.1]:${port}/`,
      `https://2130706433:${port}/`,
      `https://0x7f.1:${port}/`,
      `https://localhost:${port}/`, // a host name that resolves to loopback
      'https://[fd00:ec2::254]/',
      `https://[64:ff9b::7f00:1]:${port}/`,
    ];
    const session = await portalSession(keyA);
    for (const [index, endpoint] of targets.entries()) {
      const created = await api('POST', '/api/customer-tools/', { body: { ...tool, name: `ssrf_${index}`, endpoint } });
      expect({ endpoint, status: created.res.status }).toEqual({ endpoint, status: 201 });
      const id = CustomerTool.parse(created.body).id;
      const tested = await session.test(id, { account: 'A-1' });
      expect(tested.res.status).toBe(200);
      expect({ endpoint, outcome: /id="outcome">([a-z_]+)</.exec(tested.html)?.[1] }).toEqual({ endpoint, outcome: 'blocked_address' });
      const calls = CustomerToolCallListResponse.parse((await api('GET', `/api/customer-tools/${id}/calls`)).body).calls;
      expect(calls).toEqual([
        expect.objectContaining({ source: 'portal_test', outcome: 'blocked_address', http_status: null, response_bytes: 0 }),
      ]);
    }
    expect(canary.connections()).toBe(0);
    expect(canary6?.connections() ?? 0).toBe(0);
  });

  // Last: it spends this client's budget of test calls for the minute (10 a minute from one address, by default).
  it('throttles Test presses per client address; the 429 reaches the browser through the gateway with Retry-After', async () => {
    const created = await api('POST', '/api/customer-tools/', { body: { ...tool, name: 'throttled', endpoint: 'https://10.0.0.1/' } });
    const id = CustomerTool.parse(created.body).id;
    const session = await portalSession(keyA);
    const statuses: number[] = [];
    let refused: Awaited<ReturnType<typeof session.test>> | undefined;
    // The test above pressed 10 times already; whatever is left of the budget passes, then one press is refused.
    for (let press = 0; press < 11 && refused === undefined; press++) {
      const tested = await session.test(id, { account: 'A-1' });
      statuses.push(tested.res.status);
      if (tested.res.status === 429) refused = tested;
    }
    expect(statuses.every((status) => status === 200 || status === 429)).toBe(true);
    expect(refused?.res.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(ErrorBody.parse(JSON.parse(refused?.html ?? '{}'))).toEqual({
      status_code: 429,
      type: 'rate_limit_exceeded',
      detail: expect.stringMatching(/^Too many test calls from this address: at most 10 per 60 s\. Retry in \d+ s\.$/),
    });
    // A refused press makes no call.
    const calls = CustomerToolCallListResponse.parse((await api('GET', `/api/customer-tools/${id}/calls`)).body).calls;
    expect(calls).toHaveLength(statuses.filter((status) => status === 200).length);
  });
});
