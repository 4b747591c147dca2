import { randomBytes, randomUUID } from 'node:crypto';
import { aiConfigShape, createAiEngine, SampleMarketDataProvider, type AiEngine } from '@fin/ai';
import { parseConfig } from '@fin/config';
import { AnalysisRequest, CustomerToolCreateRequest, type CustomerToolCreateRequestInput } from '@fin/contracts';
import { createPool, type Pool } from '@fin/db';
import { startFakeAnthropic, textReply, toolResults, toolUseReply, type FakeAnthropic } from '@fin/fakes';
import { createLogger } from '@fin/log';
import { createTestDatabase, type TestDatabase } from '@fin/testing';
import {
  CustomerToolError,
  createCustomerToolRuntime,
  createKeyring,
  createToolExecutor,
  createToolStore,
  listCalls,
  reencryptToolSecrets,
  type CustomerToolRuntime,
  type ToolStore,
} from '../src';
import { startCanary, startFakeCustomerApi, testCertificate, type Canary, type FakeCustomerApi } from './support';

const logger = createLogger({ service: 'customer-tools-test', level: 'silent' });

describe('customer tools in an AI run', () => {
  let db: TestDatabase;
  let pool: Pool;
  let api: FakeCustomerApi;
  let canary: Canary;
  let claude: FakeAnthropic;
  let engine: AiEngine;
  let store: ToolStore;
  let runtime: CustomerToolRuntime;
  const keyring = createKeyring({ id: 'k1', key: randomBytes(32) });
  let tenantId: string;
  let otherTenantId: string;

  const toolInput = (fields: Partial<CustomerToolCreateRequestInput> = {}) =>
    CustomerToolCreateRequest.parse({
      name: 'get_positions',
      description: 'Positions of a client account.',
      endpoint: `${api.url}/positions`,
      input_schema: { type: 'object', properties: { account: { type: 'string' } }, required: ['account'], additionalProperties: false },
      headers: { Authorization: 'Bearer customer-secret-123' },
      ...fields,
    });

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool({ connectionString: db.url, applicationName: 'customer-tools-test' });
    api = await startFakeCustomerApi();
    canary = await startCanary();
    claude = await startFakeAnthropic();
    const config = parseConfig(aiConfigShape, {
      ANTHROPIC_API_KEY: 'sk-ant-test-0000000000',
      ANTHROPIC_BASE_URL: claude.url,
      AI_MAX_RETRIES: '0',
      AI_WEB_SEARCH: 'false',
    });
    engine = await createAiEngine({ config, logger, marketData: new SampleMarketDataProvider() });
    store = createToolStore({ pool, keyring, maxToolsPerTenant: 3 });
    // Loopback allowed: the fake customer API lives on 127.0.0.1, as the test configuration of a worker would allow.
    runtime = createCustomerToolRuntime({
      pool,
      keyring,
      logger,
      executor: createToolExecutor({ allowLoopback: true, ca: (await testCertificate()).cert }),
    });
    const { rows } = await pool.query<{ id: string }>("INSERT INTO tenants (name) VALUES ('acme'), ('globex') RETURNING id");
    tenantId = rows[0]?.id ?? '';
    otherTenantId = rows[1]?.id ?? '';
  });

  afterAll(async () => {
    await runtime?.close();
    await engine?.close();
    await Promise.all([claude?.close(), api?.close(), canary?.close()]);
    await pool?.end();
    await db?.drop();
  });

  beforeEach(async () => {
    claude.reset();
    await pool.query('DELETE FROM customer_tools');
  });

  it('reports which tool set a run offered, read in the same statement as the tools, for the result cache', async () => {
    const config = parseConfig(aiConfigShape, {
      ANTHROPIC_API_KEY: 'sk-ant-test-0000000000',
      ANTHROPIC_BASE_URL: claude.url,
      AI_MAX_RETRIES: '0',
      AI_WEB_SEARCH: 'false',
    });
    const offering = await createAiEngine({
      config,
      logger,
      marketData: new SampleMarketDataProvider(),
      customerTools: { toolsFor: (...args) => runtime.toolsFor(...args) },
    });
    const digest = async () =>
      (await pool.query<{ d: string | null }>("SELECT customer_tool_set_digest($1, 'analysis') AS d", [tenantId])).rows[0]!.d;
    const run = async () => {
      claude.reply(textReply('An answer.'));
      const outcome = await offering.analysis(AnalysisRequest.parse({ prompt: 'Positions?' }), {
        caller: { tenantId, jobId: randomUUID() },
      });
      return outcome.customerToolSet;
    };
    try {
      expect(await run()).toBeNull();
      const tool = await store.create(tenantId, toolInput());
      const first = await run();
      expect(first).toMatch(/^[0-9a-f]{32}$/);
      expect(first).toBe(await digest());
      await store.update(tenantId, tool.id, toolInput({ description: 'Positions and cash of a client account.' }));
      const changed = await run();
      expect(changed).not.toBe(first);
      expect(changed).toBe(await digest());
      // A tool the tenant keeps for chat alone is not offered to analyses.
      await store.update(tenantId, tool.id, toolInput({ products: ['chat'] }));
      expect(await run()).toBeNull();
      // Tools handed in without the identity of their set are still tenant input: never a shared result.
      claude.reply(textReply('An answer.'));
      const [loaded] = await runtime.load({ tenantId, product: 'chat', jobId: randomUUID() });
      expect((await offering.analysis(AnalysisRequest.parse({ prompt: 'Positions?' }), { customerTools: [loaded!] })).customerToolSet).toBe(
        'unidentified',
      );
    } finally {
      await offering.close();
    }
  });

  it('runs the real engine: the model calls the tool, the call reaches the customer API and is audited', async () => {
    const tool = await store.create(tenantId, toolInput());
    const jobId = randomUUID();
    const customerTools = await runtime.load({ tenantId, product: 'analysis', jobId });
    expect(customerTools.map((definition) => definition.name)).toEqual(['get_positions']);

    claude.reply(toolUseReply('get_positions', { account: 'A-1' }), (request) =>
      textReply(`Seen: ${toolResults(request.body)[0]?.text ?? ''}`),
    );
    const { result } = await engine.analysis(AnalysisRequest.parse({ prompt: 'How is account A-1 positioned?' }), { customerTools });

    // The model was offered the customer's schema as written, and got the API's answer back.
    const offered = (claude.requests[0]?.body as { tools: { name: string; input_schema: unknown }[] }).tools.find(
      (t) => t.name === 'get_positions',
    );
    expect(offered?.input_schema).toEqual({
      type: 'object',
      properties: { account: { type: 'string' } },
      required: ['account'],
      additionalProperties: false,
    });
    expect(result.content).toContain('"symbol":"AAPL"');
    expect(api.requests.at(-1)).toMatchObject({ method: 'POST', path: '/positions', body: '{"account":"A-1"}' });
    expect(api.requests.at(-1)?.headers.authorization).toBe('Bearer customer-secret-123');

    const calls = await listCalls(pool, tenantId, tool.id);
    expect(calls).toEqual([
      expect.objectContaining({
        toolId: tool.id,
        toolName: 'get_positions',
        source: 'job',
        product: 'analysis',
        jobId,
        outcome: 'ok',
        httpStatus: 200,
        error: null,
      }),
    ]);
    expect(calls[0]?.responseBytes).toBeGreaterThan(0);
    const { rows } = await pool.query('SELECT * FROM customer_tool_calls');
    expect(JSON.stringify(rows)).not.toContain('customer-secret-123');
  });

  it('gives the model a short error for a refused target, audits it, and never connects', async () => {
    const tool = await store.create(tenantId, toolInput({ endpoint: `https://[::ffff:127.0.0.1]:${canary.port}/x` }));
    const jobId = randomUUID();
    const customerTools = await runtime.load({ tenantId, product: 'news', jobId });
    claude.reply(toolUseReply('get_positions', { account: 'A-1' }), textReply('Could not read positions.'));
    await engine.analysis(AnalysisRequest.parse({ prompt: 'Positions?' }), { customerTools });
    const toolResult = toolResults(claude.requests[1]?.body as never)[0];
    expect(toolResult).toMatchObject({ isError: true });
    expect(canary.connections()).toBe(0);
    expect(await listCalls(pool, tenantId, tool.id)).toEqual([
      expect.objectContaining({ outcome: 'blocked_address', httpStatus: null, jobId }),
    ]);
  });

  it('offers only enabled tools of the tenant that allow the product', async () => {
    await store.create(tenantId, toolInput({ name: 'for_chat', products: ['chat'] }));
    await store.create(tenantId, toolInput({ name: 'disabled', enabled: false }));
    await store.create(tenantId, toolInput({ name: 'for_all' }));
    await store.create(otherTenantId, toolInput({ name: 'not_yours' }));
    const names = async (product: 'news' | 'chat') =>
      (await runtime.load({ tenantId, product, conversationId: randomUUID() })).map((tool) => tool.name);
    expect(await names('news')).toEqual(['for_all']);
    expect(await names('chat')).toEqual(['for_chat', 'for_all']);
  });

  it("validates the model's arguments against the schema before anything is sent", async () => {
    await store.create(tenantId, toolInput());
    const before = api.requests.length;
    const customerTools = await runtime.load({ tenantId, product: 'analysis', jobId: randomUUID() });
    claude.reply(toolUseReply('get_positions', { account: 7 }), textReply('Bad input.'));
    await engine.analysis(AnalysisRequest.parse({ prompt: 'Positions?' }), { customerTools });
    expect(JSON.stringify(claude.requests[1]?.body)).toContain('arguments.account: must be string');
    expect(api.requests.length).toBe(before);
  });

  it('stores tools per tenant: duplicate names conflict, the cap holds, schemas are compiled, headers stay sealed', async () => {
    const tool = await store.create(tenantId, toolInput());
    await expect(store.create(tenantId, toolInput())).rejects.toMatchObject({
      kind: 'conflict',
      detail: 'name: a tool named "get_positions" already exists',
    });
    await expect(store.create(otherTenantId, toolInput())).resolves.toMatchObject({ name: 'get_positions' });
    await expect(
      store.create(tenantId, toolInput({ name: 'bad', input_schema: { type: 'object', properties: { a: { type: 'nope' } } } })),
    ).rejects.toBeInstanceOf(CustomerToolError);
    await store.create(tenantId, toolInput({ name: 'two' }));
    await store.create(tenantId, toolInput({ name: 'three' }));
    await expect(store.create(tenantId, toolInput({ name: 'four' }))).rejects.toMatchObject({
      kind: 'invalid',
      detail: expect.stringContaining('3 tools'),
    });

    expect(await store.get(otherTenantId, tool.id)).toBeNull();
    expect(await store.delete(otherTenantId, tool.id)).toBe(false);
    const { rows } = await pool.query<{ headers_ciphertext: Buffer }>('SELECT headers_ciphertext FROM customer_tools WHERE id = $1', [
      tool.id,
    ]);
    expect(rows[0]?.headers_ciphertext.toString('latin1')).not.toContain('customer-secret-123');
    expect(await store.headersOf(tenantId, tool.id)).toEqual({ Authorization: 'Bearer customer-secret-123' });

    // PUT without headers keeps them; {} removes them.
    const kept = await store.update(tenantId, tool.id, toolInput({ headers: undefined, description: 'Changed.' }));
    expect(kept).toMatchObject({ description: 'Changed.', headerNames: ['Authorization'] });
    expect(await store.headersOf(tenantId, tool.id)).toEqual({ Authorization: 'Bearer customer-secret-123' });
    expect(await store.update(tenantId, tool.id, toolInput({ headers: {} }))).toMatchObject({ headerNames: [] });
    expect(await store.headersOf(tenantId, tool.id)).toEqual({});
    expect(await store.update(otherTenantId, tool.id, toolInput())).toBeNull();
  });

  it('re-encrypts every stored secret under a new key, after which the old key can go', async () => {
    const tool = await store.create(tenantId, toolInput());
    const rotated = createKeyring({ id: 'k2', key: randomBytes(32) }, [keyring.current]);
    expect(await reencryptToolSecrets(pool, rotated)).toBe(1);
    expect(await reencryptToolSecrets(pool, rotated)).toBe(0);
    const onlyNew = createToolStore({ pool, keyring: createKeyring(rotated.current) });
    expect(await onlyNew.headersOf(tenantId, tool.id)).toEqual({ Authorization: 'Bearer customer-secret-123' });
  });

  it('test calls from the portal are audited as portal_test, and bad sample input is refused before sending', async () => {
    const tool = await store.create(tenantId, toolInput({ enabled: false }));
    const refused = await runtime.testCall(tenantId, tool.id, { account: 1 });
    expect(refused).toMatchObject({ inputProblems: ['arguments.account: must be string'], result: null });
    const done = await runtime.testCall(tenantId, tool.id, { account: 'A-9' });
    expect(done?.result).toMatchObject({ outcome: 'ok', httpStatus: 200 });
    expect(done?.record).toMatchObject({ source: 'portal_test', jobId: null, outcome: 'ok' });
    expect(await runtime.testCall(otherTenantId, tool.id, { account: 'A-9' })).toBeNull();
  });
});
