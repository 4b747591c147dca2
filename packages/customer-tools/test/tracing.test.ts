// A customer tool call, with traces recorded (an in-memory exporter in place of OTLP): one `execute_tool <name>`
// span with the tool's name, tenant and outcome, and nothing of its URL, query string, headers, input or answer.
import { randomBytes } from 'node:crypto';
import { CustomerToolCreateRequest } from '@fin/contracts';
import { createPool, type Pool } from '@fin/db';
import { createLogger } from '@fin/log';
import { createTestDatabase, type TestDatabase } from '@fin/testing';
import { SpanKind, useTracer } from '@fin/tracing';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { createCustomerToolRuntime, createKeyring, createToolExecutor, createToolStore, type CustomerToolRuntime } from '../src';
import { startFakeCustomerApi, testCertificate, type FakeCustomerApi } from './support';

describe('customer tool calls in traces', () => {
  let db: TestDatabase;
  let pool: Pool;
  let api: FakeCustomerApi;
  let runtime: CustomerToolRuntime;
  const exporter = new InMemorySpanExporter();
  const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  const keyring = createKeyring({ id: 'k1', key: randomBytes(32) });

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool({ connectionString: db.url, applicationName: 'customer-tools-tracing-test' });
    api = await startFakeCustomerApi();
    runtime = createCustomerToolRuntime({
      pool,
      keyring,
      logger: createLogger({ service: 'customer-tools-test', level: 'silent' }),
      executor: createToolExecutor({ allowLoopback: true, ca: (await testCertificate()).cert }),
    });
    useTracer(provider.getTracer('test'));
  });

  afterAll(async () => {
    useTracer(undefined);
    await provider.shutdown();
    await runtime?.close();
    await api?.close();
    await pool?.end();
    await db?.drop();
  });

  it('records the tool, tenant and outcome, never the endpoint, its secrets or the data', async () => {
    const { rows } = await pool.query<{ id: string }>("INSERT INTO tenants (name) VALUES ('acme') RETURNING id");
    const tenantId = rows[0]?.id ?? '';
    const store = createToolStore({ pool, keyring, maxToolsPerTenant: 3 });
    const tool = await store.create(
      tenantId,
      CustomerToolCreateRequest.parse({
        name: 'get_positions',
        description: 'Positions of a client account.',
        endpoint: `${api.url}/positions?api_token=query-secret-456`,
        input_schema: { type: 'object', properties: { account: { type: 'string' } }, required: ['account'] },
        headers: { Authorization: 'Bearer customer-secret-123' },
      }),
    );
    exporter.reset();
    const done = await runtime.testCall(tenantId, tool.id, { account: 'A-private-7' });
    expect(done?.result).toMatchObject({ outcome: 'ok', httpStatus: 200 });

    const spans = exporter.getFinishedSpans();
    const call = spans.find((span) => span.name === 'execute_tool get_positions');
    expect(call?.kind).toBe(SpanKind.CLIENT);
    expect(call?.attributes).toEqual({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'get_positions',
      'fin.tenant.id': tenantId,
      'fin.tool.outcome': 'ok',
      'http.response.status_code': 200,
    });
    const recorded = JSON.stringify(spans.map(({ name, attributes, events, status }) => ({ name, attributes, events, status })));
    for (const secret of ['query-secret-456', 'customer-secret-123', 'A-private-7', api.url]) expect(recorded).not.toContain(secret);
  });
});
