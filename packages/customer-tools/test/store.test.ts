// The tool store on a real database: what an update may do with the stored header secrets.
import { randomBytes, randomUUID } from 'node:crypto';
import { CustomerToolCreateRequest, type CustomerToolCreateRequestInput } from '@fin/contracts';
import { createPool, type Pool } from '@fin/db';
import { createLogger } from '@fin/log';
import { createTestDatabase, type TestDatabase } from '@fin/testing';
import { CustomerToolError, createCustomerToolRuntime, createKeyring, createToolExecutor, createToolStore, type ToolStore } from '../src';

const keyring = createKeyring({ id: 'k1', key: randomBytes(32) });

describe('the tool store', () => {
  let db: TestDatabase;
  let pool: Pool;
  let store: ToolStore;
  let tenantId: string;

  const toolInput = (fields: Partial<CustomerToolCreateRequestInput> = {}) =>
    CustomerToolCreateRequest.parse({
      name: 'get_positions',
      description: 'Positions of a client account.',
      endpoint: 'https://api.example.com/positions',
      input_schema: { type: 'object', properties: { account: { type: 'string' } } },
      headers: { Authorization: 'Bearer customer-secret-123' },
      ...fields,
    });

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool({ connectionString: db.url, applicationName: 'customer-tools-store-test' });
    store = createToolStore({ pool, keyring });
    const { rows } = await pool.query<{ id: string }>("INSERT INTO tenants (name) VALUES ('acme') RETURNING id");
    tenantId = rows[0]?.id ?? '';
  });

  afterAll(async () => {
    await pool?.end();
    await db?.drop();
  });

  beforeEach(async () => {
    await pool.query('DELETE FROM customer_tools');
  });

  it('keeps stored headers on an update within the same origin', async () => {
    const tool = await store.create(tenantId, toolInput());
    const { headers: _omitted, ...update } = toolInput({ endpoint: 'https://api.example.com/v2/positions?full=1', method: 'GET' });
    const updated = await store.update(tenantId, tool.id, update);
    expect(updated?.headerNames).toEqual(['Authorization']);
    expect(await store.headersOf(tenantId, tool.id)).toEqual({ Authorization: 'Bearer customer-secret-123' });
  });

  it.each(['https://collector.evil.example/positions', 'https://api.example.com:8443/positions', 'https://API.example.com.evil.example/'])(
    'refuses to move stored headers to %s: the tool and its secrets stay as they were',
    async (endpoint) => {
      const tool = await store.create(tenantId, toolInput());
      const { headers: _omitted, ...update } = toolInput({ endpoint });
      const refused = await store.update(tenantId, tool.id, update).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(CustomerToolError);
      expect(refused).toMatchObject({
        kind: 'invalid',
        reason: 'origin_changed',
        detail: expect.stringMatching(/^headers: the endpoint moves from https:\/\/api\.example\.com to /),
      });
      expect(await store.get(tenantId, tool.id)).toMatchObject({
        endpoint: 'https://api.example.com/positions',
        headerNames: ['Authorization'],
      });
      expect(await store.headersOf(tenantId, tool.id)).toEqual({ Authorization: 'Bearer customer-secret-123' });
    },
  );

  it('moves a tool to another origin when the update says which headers to send there (or none)', async () => {
    const tool = await store.create(tenantId, toolInput());
    const moved = await store.update(
      tenantId,
      tool.id,
      toolInput({ endpoint: 'https://new.example.com/p', headers: { 'X-Key': 'new-secret' } }),
    );
    expect(moved).toMatchObject({ endpoint: 'https://new.example.com/p', headerNames: ['X-Key'] });
    expect(await store.headersOf(tenantId, tool.id)).toEqual({ 'X-Key': 'new-secret' });
    const bare = await store.update(tenantId, tool.id, toolInput({ endpoint: 'https://third.example.com/p', headers: {} }));
    expect(bare?.headerNames).toEqual([]);
    // Nothing stored, nothing to follow: omitted headers may move freely.
    const { headers: _omitted, ...update } = toolInput({ endpoint: 'https://fourth.example.com/p' });
    expect((await store.update(tenantId, tool.id, update))?.endpoint).toBe('https://fourth.example.com/p');
  });

  // Issue 34: a tool saved under a name that is now one of the engine's own (the migration that reserved it
  // disabled it, with a reason) made every run that offered it fail.
  it('a tool under a reserved name is never offered, cannot be enabled, and is saved again only under another name', async () => {
    const tool = await store.create(tenantId, toolInput({ headers: {} }));
    const runtime = createCustomerToolRuntime({
      pool,
      keyring,
      logger: createLogger({ service: 'store-test', level: 'silent' }),
      executor: createToolExecutor(),
    });
    try {
      // Enabled under the name, as before the migration: still not offered beside our own tool of that name.
      await pool.query("UPDATE customer_tools SET name = 'web_search' WHERE id = $1", [tool.id]);
      expect(await runtime.load({ tenantId, product: 'news', jobId: randomUUID() })).toEqual([]);
    } finally {
      await runtime.close();
    }

    const reason = 'Disabled by the service: "web_search" is the name of one of the service\'s own tools.';
    await pool.query('UPDATE customer_tools SET enabled = false, disabled_reason = $2 WHERE id = $1', [tool.id, reason]);
    const before = await store.get(tenantId, tool.id);
    expect(before).toMatchObject({ name: 'web_search', enabled: false, disabledReason: reason });
    const refused = await store.setEnabled(tenantId, tool.id, true).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(CustomerToolError);
    expect(refused).toMatchObject({
      kind: 'invalid',
      detail: 'name: "web_search" is reserved for the service\'s own tools: choose another name',
    });
    expect(await store.get(tenantId, tool.id)).toEqual(before);
    expect(await store.setEnabled(tenantId, tool.id, false)).toMatchObject({ enabled: false, disabledReason: reason });

    const renamed = await store.update(tenantId, tool.id, toolInput({ name: 'search_the_web', headers: {} }));
    expect(renamed).toMatchObject({ name: 'search_the_web', enabled: true, disabledReason: null });
  });

  it("answers null for a tool that is not the tenant's, whatever the endpoint", async () => {
    const tool = await store.create(tenantId, toolInput());
    const { rows } = await pool.query<{ id: string }>("INSERT INTO tenants (name) VALUES ('globex') RETURNING id");
    const { headers: _omitted, ...update } = toolInput({ endpoint: 'https://collector.evil.example/' });
    expect(await store.update(rows[0]?.id ?? '', tool.id, update)).toBeNull();
  });

  it('a stored schema that no longer compiles (a backreference saved before RE2) refuses the test call with a problem, not an error', async () => {
    const tool = await store.create(tenantId, toolInput({ headers: {} }));
    await pool.query('UPDATE customer_tools SET input_schema = $2 WHERE id = $1', [
      tool.id,
      { type: 'object', properties: { s: { type: 'string', pattern: '^(a)\\1$' } } },
    ]);
    const runtime = createCustomerToolRuntime({
      pool,
      keyring,
      logger: createLogger({ service: 'store-test', level: 'silent' }),
      executor: createToolExecutor(),
    });
    try {
      expect(await runtime.testCall(tenantId, tool.id, { s: 'aa' })).toEqual({
        inputProblems: ['input_schema: no longer accepted; edit the tool to see why'],
        result: null,
        record: null,
      });
    } finally {
      await runtime.close();
    }
  });
});
