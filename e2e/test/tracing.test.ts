import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { offlineAnalyst } from '@fin/ai';
import { AsyncJobResponse, JobStatusResponse } from '@fin/contracts';
import { startFakeAnthropic, startFakeFinnhub, type FakeAnthropic, type FakeFinnhub } from '@fin/fakes';
import { createTestDatabase, waitFor, type TestDatabase } from '@fin/testing';
import { sharedEnv, startSystem, type System } from '../src/system';

/** One span as OTLP/HTTP JSON carries it, with the service.name of its resource. */
interface ExportedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  /** OTLP's numbering: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  attributes: Record<string, unknown>;
}

interface OtlpAttribute {
  key: string;
  value: { stringValue?: string; intValue?: string | number; boolValue?: boolean; arrayValue?: unknown };
}
interface OtlpExport {
  resourceSpans: {
    resource: { attributes: OtlpAttribute[] };
    scopeSpans: { spans: (Omit<ExportedSpan, 'service' | 'attributes'> & { attributes: OtlpAttribute[] })[] }[];
  }[];
}

const KIND = { internal: 1, server: 2, client: 3, producer: 4, consumer: 5 } as const;

function attributesOf(list: OtlpAttribute[]): Record<string, unknown> {
  return Object.fromEntries(
    list.map(({ key, value }) => [
      key,
      value.stringValue ?? (value.intValue === undefined ? (value.boolValue ?? value.arrayValue) : Number(value.intValue)),
    ]),
  );
}

/** An OTLP/HTTP receiver, as a collector would be: keeps every export request's body and its spans. */
async function startCollector(): Promise<{ server: Server; url: string; bodies: string[]; spans: ExportedSpan[] }> {
  const bodies: string[] = [];
  const spans: ExportedSpan[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      if (req.method === 'POST' && req.url === '/v1/traces') {
        bodies.push(body);
        for (const { resource, scopeSpans } of (JSON.parse(body) as OtlpExport).resourceSpans) {
          const service = String(attributesOf(resource.attributes)['service.name']);
          for (const span of scopeSpans.flatMap((scope) => scope.spans))
            spans.push({ ...span, service, attributes: attributesOf(span.attributes) });
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, bodies, spans };
}

/**
 * Traces exported over OTLP from every process of the system: one news request's trace runs from the gateway
 * through the news API, its outbox row, Kafka and the news worker to the model call, one trace id throughout,
 * each span the child of the one before, with the job and tenant named and no secret anywhere.
 */
describe('traces of a news request', () => {
  let db: TestDatabase;
  let claude: FakeAnthropic;
  let finnhub: FakeFinnhub;
  let collector: Awaited<ReturnType<typeof startCollector>>;
  let system: System;
  let env: Record<string, string>;
  let key: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    claude = await startFakeAnthropic({ handler: offlineAnalyst() });
    finnhub = await startFakeFinnhub({ token: 'finnhub-trace-token' });
    collector = await startCollector();
    env = {
      ...sharedEnv({ databaseUrl: db.url, anthropicUrl: claude.url, finnhubUrl: finnhub.apiBaseUrl, finnhubToken: 'finnhub-trace-token' }),
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      // Export within a tenth of a second rather than the default five.
      OTEL_BSP_SCHEDULE_DELAY: '100',
    };
    system = await startSystem(env);
    key = system.tenantKey('traced');
  }, 120_000);

  afterAll(async () => {
    await system?.stop();
    await Promise.all([claude?.close(), finnhub?.close()]);
    collector?.server.closeAllConnections();
    collector?.server.close();
    await db?.drop();
  });

  it('runs gateway → news API → outbox → Kafka → worker → model under one trace id, with job and tenant and no secrets', async () => {
    // The caller's own trace: every span of the request must belong to it.
    const traceId = 'e2e0000000000000000000000000000a';
    const callerSpanId = 'c0ffee0000000001';
    const res = await fetch(`${system.gatewayUrl}/api/products/news`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-API-Key': key, traceparent: `00-${traceId}-${callerSpanId}-01` },
      body: JSON.stringify({ symbols: ['NVDA'], n: 2 }),
    });
    expect(res.status).toBe(202);
    const job = AsyncJobResponse.parse(await res.json());
    await waitFor(
      async () => {
        const status = JobStatusResponse.parse(
          await (await fetch(`${system.gatewayUrl}${job.status_url}`, { headers: { 'X-API-Key': key } })).json(),
        );
        return status.status === 'completed' && status;
      },
      { timeoutMs: 30_000, intervalMs: 100, what: 'the traced job to complete' },
    );

    const inTrace = () => collector.spans.filter((span) => span.traceId === traceId);
    const find = (predicate: (span: ExportedSpan) => boolean, what: string) =>
      waitFor(() => inTrace().find(predicate), { timeoutMs: 15_000, intervalMs: 50, what });

    const gateway = await find((s) => s.service === 'gateway' && s.kind === KIND.server, 'the gateway server span');
    const hop = await find((s) => s.kind === KIND.client && s.attributes['server.address'] === 'news', "the gateway's proxy span");
    const api = await find((s) => s.service === 'news' && s.kind === KIND.server, "the news API's server span");
    const outbox = await find((s) => s.name === 'outbox jobs.news.requested', 'the outbox span');
    const send = await find((s) => s.kind === KIND.producer && s.name === 'send jobs.news.requested', 'the relay producer span');
    const consume = await find((s) => s.kind === KIND.consumer && s.name === 'process jobs.news.requested', 'the worker consumer span');
    const run = await find((s) => s.name === 'job news', "the worker's job span");
    const model = await find((s) => s.kind === KIND.client && s.name.startsWith('chat '), 'the model call span');

    // Each hop the child of the one before.
    expect(gateway.parentSpanId).toBe(callerSpanId);
    expect(hop.parentSpanId).toBe(gateway.spanId);
    expect(api.parentSpanId).toBe(hop.spanId);
    expect(outbox.parentSpanId).toBe(api.spanId);
    expect(send.parentSpanId).toBe(outbox.spanId);
    expect(consume.parentSpanId).toBe(send.spanId);
    expect(run.parentSpanId).toBe(consume.spanId);
    expect(model.parentSpanId).toBe(run.spanId);
    expect(gateway.attributes['http.route']).toBe('/api/products/news');
    expect(api.attributes['http.response.status_code']).toBe(202);

    // The job and the tenant, named on the spans that know them.
    const tenant = gateway.attributes['fin.tenant.id'];
    expect(typeof tenant).toBe('string');
    for (const span of [api, run]) expect(span.attributes).toMatchObject({ 'fin.job.id': job.job_id, 'fin.tenant.id': tenant });
    expect(run.attributes).toMatchObject({ 'fin.job.type': 'news', 'fin.job.outcome': 'completed' });
    for (const span of [outbox, send, consume])
      expect(span.attributes['fin.job.id'] ?? span.attributes['messaging.kafka.message.key']).toBe(job.job_id);
    expect(model.attributes).toMatchObject({ 'gen_ai.provider.name': 'anthropic' });
    expect(model.attributes['gen_ai.usage.input_tokens']).toEqual(expect.any(Number));
    expect(model.attributes['gen_ai.usage.output_tokens']).toEqual(expect.any(Number));

    // Postgres statements of the request are spans too, without their SQL text: a prepared statement named by its
    // name: the submission, the worker's claim and its completion, each committing by itself.
    const statements = inTrace().filter((span) => span.attributes['db.system.name'] === 'postgresql');
    expect(statements.map((span) => span.name)).toEqual(
      expect.arrayContaining(['job-store-submit', 'job-store-claim-next', 'job-store-finish']),
    );
    for (const span of statements) expect(Object.keys(span.attributes)).not.toContain('db.query.text');

    // No secret in anything exported: API key, model API key, signing secret, provider token, tool key.
    const exported = collector.bodies.join('\n');
    for (const secret of [
      key,
      env.ANTHROPIC_API_KEY,
      env.INTERNAL_SIGNING_SECRET,
      env.FINNHUB_API_KEY,
      env.CUSTOMER_TOOLS_ENCRYPTION_KEY,
    ]) {
      expect(secret).toBeTruthy();
      expect(exported).not.toContain(secret);
    }
    // Nor the system prompt sent to the model.
    const systemPrompt = claude.requests[0]?.body?.system;
    const prompt = typeof systemPrompt === 'string' ? systemPrompt : JSON.stringify(systemPrompt ?? '');
    expect(prompt.length).toBeGreaterThan(40);
    expect(exported).not.toContain(prompt.slice(0, 40));
  });
});
