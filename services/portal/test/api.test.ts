import { CustomerTool, CustomerToolCallListResponse, CustomerToolListResponse, ErrorBody, RESERVED_TOOL_NAMES } from '@fin/contracts';
import request from 'supertest';
import { startHarness, type Harness } from './support/harness';
import { replayMigration } from './support/migration';

describe('the customer-tools API', () => {
  let h: Harness;
  let acme: { tenantId: string; keyId: string };
  let globex: { tenantId: string; keyId: string };

  const tool = {
    name: 'get_positions',
    description: 'Positions of a client account.',
    endpoint: 'https://api.example.com/positions',
    input_schema: { type: 'object', properties: { account: { type: 'string' } }, required: ['account'] },
    headers: { Authorization: 'Bearer top-secret-value' },
  };

  beforeAll(async () => {
    h = await startHarness({ maxTools: 3 });
    const a = await h.tenant('acme');
    const g = await h.tenant('globex');
    acme = { tenantId: a, keyId: (await h.key(a)).keyId };
    globex = { tenantId: g, keyId: (await h.key(g)).keyId };
  });

  afterAll(async () => {
    await h?.close();
  });

  beforeEach(async () => {
    await h.pool.query('DELETE FROM customer_tools');
  });

  const call = (
    method: 'get' | 'post' | 'put' | 'delete',
    path: string,
    body?: unknown,
    caller: { tenantId: string; keyId: string; scopes?: string[] } | null = acme,
  ) => {
    const agent = request(h.app);
    const req = agent[method](path).set(h.signed(method.toUpperCase(), path, caller, body));
    return body === undefined ? req : req.send(body as object);
  };

  it('creates, reads, lists, replaces and deletes a tool; header values never come back', async () => {
    const created = await call('post', '/api/customer-tools/', tool);
    expect(created.status).toBe(201);
    const body = CustomerTool.parse(created.body);
    expect(body).toMatchObject({
      name: 'get_positions',
      method: 'POST',
      enabled: true,
      timeout_ms: 10_000,
      header_names: ['Authorization'],
      products: ['news', 'stock-report', 'analysis', 'chat'],
    });
    expect(created.headers.location).toBe(`/api/customer-tools/${body.id}`);
    expect(JSON.stringify(created.body)).not.toContain('top-secret-value');

    const read = await call('get', `/api/customer-tools/${body.id}`);
    expect(CustomerTool.parse(read.body)).toEqual(body);
    const list = await call('get', '/api/customer-tools/');
    expect(CustomerToolListResponse.parse(list.body).tools.map((t) => t.id)).toEqual([body.id]);
    expect(JSON.stringify(list.body)).not.toContain('top-secret-value');

    const replaced = await call('put', `/api/customer-tools/${body.id}`, {
      ...tool,
      headers: undefined,
      enabled: false,
      method: 'GET',
      products: ['chat'],
    });
    expect(replaced.status).toBe(200);
    expect(CustomerTool.parse(replaced.body)).toMatchObject({
      enabled: false,
      method: 'GET',
      products: ['chat'],
      header_names: ['Authorization'],
    });
    const cleared = await call('put', `/api/customer-tools/${body.id}`, { ...tool, headers: {} });
    expect(CustomerTool.parse(cleared.body).header_names).toEqual([]);

    expect((await call('delete', `/api/customer-tools/${body.id}`)).status).toBe(204);
    expect((await call('get', `/api/customer-tools/${body.id}`)).status).toBe(404);
  });

  it('answers 400 naming the field for an invalid JSON Schema, name, endpoint or header', async () => {
    const cases: [unknown, RegExp][] = [
      [{ ...tool, input_schema: { type: 'object', properties: { age: { type: 'integr' } } } }, /^input_schema\.properties\.age\.type: /],
      [{ ...tool, input_schema: { type: 'array' } }, /^input_schema\.type: must be "object"/],
      [
        { ...tool, input_schema: { type: 'object', properties: { a: { $ref: 'https://evil.example/s.json' } } } },
        /^input_schema: \$ref .* cannot be resolved/,
      ],
      [{ ...tool, name: '1-bad name' }, /^name: must start with a letter/],
      [{ ...tool, endpoint: 'http://api.example.com/' }, /^endpoint: must be an absolute https:\/\/ URL/],
      [{ ...tool, endpoint: 'https://user:pw@api.example.com/' }, /^endpoint: must not contain a user name or password/],
      [{ ...tool, headers: { Host: 'internal' } }, /^headers\.Host: .*"Host" is set by the HTTP client/],
      [{ ...tool, timeout_ms: 5 }, /^timeout_ms: must be at least 100/],
      [{ ...tool, langauge: 'en' }, /unknown field "langauge"/],
    ];
    for (const [payload, detail] of cases) {
      const res = await call('post', '/api/customer-tools/', payload);
      expect({ status: res.status, body: ErrorBody.parse(res.body) }).toEqual({
        status: 400,
        body: { status_code: 400, type: 'validation_error', detail: expect.stringMatching(detail) },
      });
    }
    expect(CustomerToolListResponse.parse((await call('get', '/api/customer-tools/')).body).tools).toEqual([]);
  });

  // Issue 34: the engine offers its own tools beside the customer's, and the Messages API refuses a request that
  // names one tool twice: a customer tool named like one of ours made every run of its account fail.
  const reservedName = (name: string) => ({
    status: 400,
    body: {
      status_code: 400,
      type: 'validation_error',
      detail: `name: "${name}" is reserved for the service's own tools: choose another name`,
    },
  });

  it("answers 400 naming `name` for the name of one of the service's own tools, on create and on update", async () => {
    for (const name of RESERVED_TOOL_NAMES) {
      const created = await call('post', '/api/customer-tools/', { ...tool, name });
      expect({ status: created.status, body: ErrorBody.parse(created.body) }).toEqual(reservedName(name));
    }
    const id = CustomerTool.parse((await call('post', '/api/customer-tools/', tool)).body).id;
    const renamed = await call('put', `/api/customer-tools/${id}`, { ...tool, name: 'web_search' });
    expect({ status: renamed.status, body: ErrorBody.parse(renamed.body) }).toEqual(reservedName('web_search'));
    expect(CustomerTool.parse((await call('get', `/api/customer-tools/${id}`)).body).name).toBe('get_positions');
    // Compared exactly, as the Messages API compares tool names: another letter case is another name.
    expect((await call('post', '/api/customer-tools/', { ...tool, name: 'Web_Search' })).status).toBe(201);
  });

  it('lists a tool the migration disabled with its reason; it is enabled again only under another name', async () => {
    const { rows } = await h.pool.query<{ id: string }>(
      `INSERT INTO customer_tools (tenant_id, name, description, endpoint, input_schema)
       VALUES ($1, 'web_search', 'Searches our archive.', 'https://api.example.com/search', '{"type": "object"}') RETURNING id`,
      [acme.tenantId],
    );
    const id = rows[0]?.id ?? '';
    await replayMigration(h.pool, '1764460800000_reserved-tool-names');

    const disabled = {
      id,
      name: 'web_search',
      enabled: false,
      disabled_reason: expect.stringMatching(
        /^Disabled by the service: "web_search" is the name of one of the service's own tools, .* Rename the tool to enable it again\.$/,
      ),
    };
    expect(CustomerToolListResponse.parse((await call('get', '/api/customer-tools/')).body).tools).toEqual([
      expect.objectContaining(disabled),
    ]);
    expect(CustomerTool.parse((await call('get', `/api/customer-tools/${id}`)).body)).toMatchObject(disabled);

    const { headers: _headers, ...rest } = tool;
    const enabled = await call('put', `/api/customer-tools/${id}`, { ...rest, name: 'web_search', enabled: true });
    expect({ status: enabled.status, body: ErrorBody.parse(enabled.body) }).toEqual(reservedName('web_search'));
    expect(CustomerTool.parse((await call('get', `/api/customer-tools/${id}`)).body)).toMatchObject(disabled);

    const renamed = await call('put', `/api/customer-tools/${id}`, { ...rest, name: 'search_archive', enabled: true });
    expect(CustomerTool.parse(renamed.body)).toMatchObject({ id, name: 'search_archive', enabled: true, disabled_reason: null });
  });

  // Issue 27 item 0: `"__proto__": null` inside input_schema reached Prisma as an object without a prototype,
  // and its JSON serialiser threw (500); `"__proto__": {…}` was stored without the key.
  it.each([
    ['null', 'null'],
    ['an object', '{"x":1}'],
  ])('refuses "__proto__" (%s) at any depth of input_schema with 400 naming its path; nothing is stored', async (_name, value) => {
    const text = `{"name":"proto_tool","description":"d","endpoint":"https://api.example.com/p","input_schema":{"type":"object","properties":{"a":{"type":"string","__proto__":${value}}}}}`;
    const res = await request(h.app)
      .post('/api/customer-tools/')
      .set(h.signed('POST', '/api/customer-tools/', acme, text))
      .set('Content-Type', 'application/json')
      .send(text);
    expect(res.status).toBe(400);
    expect(ErrorBody.parse(res.body)).toEqual({
      detail: 'input_schema.properties.a.__proto__: the key "__proto__" is not allowed',
      status_code: 400,
      type: 'validation_error',
    });
    expect((await h.pool.query('SELECT 1 FROM customer_tools')).rowCount).toBe(0);
  });

  it('409 for a duplicate name in the tenant, 400 beyond the per-tenant cap; names are per tenant', async () => {
    expect((await call('post', '/api/customer-tools/', tool)).status).toBe(201);
    const duplicate = await call('post', '/api/customer-tools/', tool);
    expect(duplicate.status).toBe(409);
    expect(duplicate.body).toEqual({ status_code: 409, type: 'conflict', detail: 'name: a tool named "get_positions" already exists' });
    expect((await call('post', '/api/customer-tools/', tool, globex)).status).toBe(201);
    expect((await call('post', '/api/customer-tools/', { ...tool, name: 'two' })).status).toBe(201);
    expect((await call('post', '/api/customer-tools/', { ...tool, name: 'three' })).status).toBe(201);
    const fourth = await call('post', '/api/customer-tools/', { ...tool, name: 'four' });
    expect(fourth.status).toBe(400);
    expect(ErrorBody.parse(fourth.body).detail).toMatch(/already has 3 tools/);
  });

  it('a PUT that moves the endpoint to another origin must give the headers again: stored secrets never follow it', async () => {
    const id = CustomerTool.parse((await call('post', '/api/customer-tools/', tool)).body).id;
    const { endpoint: _endpoint, headers: _headers, ...rest } = tool;

    // Same origin, another path: omitted headers are kept.
    const samePlace = await call('put', `/api/customer-tools/${id}`, { ...rest, endpoint: 'https://api.example.com/v2/positions' });
    expect(CustomerTool.parse(samePlace.body).header_names).toEqual(['Authorization']);

    for (const endpoint of [
      'https://collector.evil.example/positions',
      'https://api.example.com:8443/positions',
      'https://sub.api.example.com/positions',
    ]) {
      const moved = await call('put', `/api/customer-tools/${id}`, { ...rest, endpoint });
      expect({ status: moved.status, body: ErrorBody.parse(moved.body) }).toEqual({
        status: 400,
        body: {
          status_code: 400,
          type: 'validation_error',
          detail: expect.stringMatching(/^headers: the endpoint moves from https:\/\/api\.example\.com to https:\/\/.*send headers again/),
        },
      });
    }
    const unchanged = CustomerTool.parse((await call('get', `/api/customer-tools/${id}`)).body);
    expect(unchanged).toMatchObject({ endpoint: 'https://api.example.com/v2/positions', header_names: ['Authorization'] });

    // Saying what to send there is accepted: new headers, or none.
    const withNew = await call('put', `/api/customer-tools/${id}`, {
      ...rest,
      endpoint: 'https://new.example.com/p',
      headers: { 'X-Key': 'other' },
    });
    expect(CustomerTool.parse(withNew.body)).toMatchObject({ endpoint: 'https://new.example.com/p', header_names: ['X-Key'] });
    const withNone = await call('put', `/api/customer-tools/${id}`, { ...rest, endpoint: 'https://third.example.com/p', headers: {} });
    expect(CustomerTool.parse(withNone.body).header_names).toEqual([]);
    // A tool without stored headers moves freely.
    expect((await call('put', `/api/customer-tools/${id}`, { ...rest, endpoint: 'https://fourth.example.com/p' })).status).toBe(200);
  });

  it('refuses a schema pattern RE2 cannot run, naming the keyword; a catastrophic one is accepted and runs in linear time', async () => {
    const refused = await call('post', '/api/customer-tools/', {
      ...tool,
      input_schema: { type: 'object', properties: { x: { type: 'string', pattern: '^(a)\\1$' } } },
    });
    expect({ status: refused.status, body: ErrorBody.parse(refused.body) }).toEqual({
      status: 400,
      body: {
        status_code: 400,
        type: 'validation_error',
        detail: expect.stringMatching(/^input_schema\.properties\.x\.pattern: backreferences/),
      },
    });
    const accepted = await call('post', '/api/customer-tools/', {
      ...tool,
      input_schema: { type: 'object', properties: { x: { type: 'string', pattern: '^(a+)+$' } } },
    });
    expect(accepted.status).toBe(201);
  });

  it("another tenant's tool is a 404, on every route", async () => {
    const id = CustomerTool.parse((await call('post', '/api/customer-tools/', tool)).body).id;
    for (const [method, path, body] of [
      ['get', `/api/customer-tools/${id}`],
      ['put', `/api/customer-tools/${id}`, tool],
      ['delete', `/api/customer-tools/${id}`],
      ['get', `/api/customer-tools/${id}/calls`],
    ] as const) {
      const res = await call(method, path, body, globex);
      expect({ path, method, status: res.status, type: (res.body as ErrorBody).type }).toEqual({
        path,
        method,
        status: 404,
        type: 'not_found',
      });
    }
    expect((await call('get', `/api/customer-tools/${id}`)).status).toBe(200);
  });

  it("lists a tool's audited calls, newest first, with a bounded limit", async () => {
    const id = CustomerTool.parse((await call('post', '/api/customer-tools/', tool)).body).id;
    await h.pool.query(
      `INSERT INTO customer_tool_calls (tenant_id, tool_id, tool_name, source, product, job_id, outcome, http_status, duration_ms, response_bytes, created_at)
       VALUES ($1, $2, 'get_positions', 'job', 'news', gen_random_uuid(), 'ok', 200, 12, 34, now() - interval '1 minute'),
              ($1, $2, 'get_positions', 'portal_test', NULL, NULL, 'timeout', NULL, 10000, 0, now())`,
      [acme.tenantId, id],
    );
    const res = await call('get', `/api/customer-tools/${id}/calls?limit=1`);
    expect(CustomerToolCallListResponse.parse(res.body).calls).toEqual([
      expect.objectContaining({ source: 'portal_test', outcome: 'timeout', http_status: null }),
    ]);
    expect(ErrorBody.parse((await call('get', `/api/customer-tools/${id}/calls?limit=0`)).body).detail).toMatch(
      /^limit: must be at least 1/,
    );
  });

  it('refuses requests that did not come through the gateway, and keys without the tools scope', async () => {
    const direct = await request(h.app).get('/api/customer-tools/');
    expect(direct.status).toBe(401);
    const anonymous = await call('get', '/api/customer-tools/', undefined, null);
    expect(anonymous.status).toBe(401);
    const noScope = await call('get', '/api/customer-tools/', undefined, { ...acme, scopes: ['news'] });
    expect(noScope.status).toBe(403);
  });
});
