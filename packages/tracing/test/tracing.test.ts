// Tracing off by default (nothing loaded, nothing sent) and on with an endpoint: spans reach an OTLP/HTTP
// receiver (a local server reading the JSON export requests), children of the trace they continue.
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConfigError, parseConfig } from '@fin/config';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { createLogger, formatTraceparent } from '@fin/log';
import { tracingConfigShape, type TracingConfig } from '../src/config';
import { startTracing } from '../src/sdk';
import { FIN_ATTRIBUTES, SpanKind, tracingEnabled } from '../src/spans';

const logger = createLogger({ service: 'tracing-test', level: 'silent' });

interface ExportedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: { key: string; value: { stringValue?: string; intValue?: string | number } }[];
}

interface Receiver {
  server: Server;
  url: string;
  bodies: string[];
  headers: IncomingHttpHeaders[];
  spans: () => ExportedSpan[];
  serviceNames: () => string[];
}

async function startReceiver(): Promise<Receiver> {
  const bodies: string[] = [];
  const headers: IncomingHttpHeaders[] = [];
  const server = createServer((req, res) => {
    headers.push(req.headers);
    let body = '';
    req.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      if (req.method === 'POST' && req.url === '/v1/traces') bodies.push(body);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  type Export = { resourceSpans: { resource: { attributes: ExportedSpan['attributes'] }; scopeSpans: { spans: ExportedSpan[] }[] }[] };
  const exports = () => bodies.map((body) => JSON.parse(body) as Export);
  return {
    server,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    bodies,
    headers,
    spans: () => exports().flatMap((e) => e.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans))),
    serviceNames: () =>
      exports().flatMap((e) =>
        e.resourceSpans.flatMap((r) => r.resource.attributes.filter((a) => a.key === 'service.name').map((a) => a.value.stringValue ?? '')),
      ),
  };
}

function attribute(span: ExportedSpan, key: string): string | number | undefined {
  const value = span.attributes.find((a) => a.key === key)?.value;
  return value?.stringValue ?? (value?.intValue === undefined ? undefined : Number(value.intValue));
}

function config(env: NodeJS.ProcessEnv): TracingConfig {
  return parseConfig(tracingConfigShape, env);
}

describe('tracing', () => {
  let receiver: Receiver;

  beforeEach(async () => {
    receiver = await startReceiver();
  });

  afterEach(async () => {
    receiver.server.closeAllConnections();
    receiver.server.close();
    await once(receiver.server, 'close');
  });

  it('stays off when an endpoint is set but OTEL_SDK_DISABLED or OTEL_TRACES_EXPORTER=none says so', async () => {
    for (const env of [
      { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_SDK_DISABLED: 'true' },
      { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_TRACES_EXPORTER: 'none' },
    ]) {
      const tracing = await startTracing({ config: config(env), serviceName: 'news', logger });
      expect(tracing.endpoint).toBeUndefined();
      expect(tracingEnabled()).toBe(false);
    }
  });

  it('refuses a bad value by naming the variable', () => {
    expect(() => config({ OTEL_TRACES_SAMPLER: 'sometimes' })).toThrow(ConfigError);
    expect(() => config({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' })).toThrow(/OTEL_EXPORTER_OTLP_ENDPOINT/);
    expect(() => config({ OTEL_TRACES_SAMPLER_ARG: '2' })).toThrow(/OTEL_TRACES_SAMPLER_ARG/);
    expect(() => config({ OTEL_BSP_SCHEDULE_DELAY: 'soon' })).toThrow(/OTEL_BSP_SCHEDULE_DELAY/);
  });

  it('exports spans over OTLP/HTTP JSON, each a child of the span it ran in, continuing a received traceparent', async () => {
    const parent = { traceId: 'c'.repeat(32), spanId: 'd'.repeat(16), sampled: true };
    const child = spawn(process.execPath, ['--conditions=development', '--import', 'tsx', path.join(__dirname, 'fixtures/export.ts')], {
      cwd: path.join(__dirname, '..'),
      env: {
        PATH: process.env.PATH,
        OTEL_EXPORTER_OTLP_ENDPOINT: `${receiver.url}/`,
        OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%20collector-token',
        PARENT: formatTraceparent(parent),
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let stdout = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    const [code] = (await once(child, 'close')) as [number | null];
    expect(code).toBe(0);
    const { sentOn } = JSON.parse(stdout.trim()) as { sentOn: string };

    expect(receiver.serviceNames()).toContain('news');
    expect(receiver.headers.map((headers) => headers.authorization)).toContain('Bearer collector-token');
    const spans = receiver.spans();
    const consumer = spans.find((span) => span.name === 'process news.requested');
    const job = spans.find((span) => span.name === 'job news');
    // OTLP numbers span kinds from 1 (INTERNAL); the API from 0.
    expect(consumer).toMatchObject({ traceId: parent.traceId, parentSpanId: parent.spanId, kind: SpanKind.CONSUMER + 1 });
    expect(job).toMatchObject({ traceId: parent.traceId, parentSpanId: consumer?.spanId });
    expect(job && attribute(job, FIN_ATTRIBUTES.jobId)).toBe('job-1');
    expect(job && attribute(job, FIN_ATTRIBUTES.tenantId)).toBe('tenant-1');
    // What the job sends on (an outbox row, a request) names the job's span as its parent.
    expect(sentOn).toBe(`00-${parent.traceId}-${job?.spanId}-01`);
    const failing = spans.find((span) => span.name === 'failing') as ExportedSpan & { status?: { code?: number; message?: string } };
    expect(failing.status).toMatchObject({ code: 2, message: 'Error' });
    // An error's message (which may quote input) is never exported.
    expect(receiver.bodies.join('')).not.toContain('secret input');
  });
});
