// Tracing is off by default: without OTEL variables the SDK and the exporter are never loaded (loading either
// fails this file), the spans code gets are the API's no-op ones, and a received trace is still continued.
import { parseConfig } from '@fin/config';
import { createLogger, currentTrace, formatTraceparent } from '@fin/log';
import { tracingConfigShape } from '../src/config';
import { startTracing } from '../src/sdk';
import { setSpanAttributes, tracingEnabled, withRemoteSpan, withSpan } from '../src/spans';

jest.mock('@opentelemetry/sdk-trace', () => {
  throw new Error('the SDK was loaded');
});
jest.mock('@opentelemetry/exporter-trace-otlp-http', () => {
  throw new Error('the exporter was loaded');
});

it('loads nothing and records nothing without OTEL variables', async () => {
  const tracing = await startTracing({
    config: parseConfig(tracingConfigShape, {}),
    serviceName: 'news',
    logger: createLogger({ service: 'test', level: 'silent' }),
  });
  expect(tracing.endpoint).toBeUndefined();
  expect(tracingEnabled()).toBe(false);
  const recording = await withSpan('work', {}, (span) => {
    setSpanAttributes({ 'fin.job.id': 'job-1' });
    return Promise.resolve(span.isRecording());
  });
  expect(recording).toBe(false);
  // A received traceparent is continued with the ids @fin/log always made: same trace, a span of its own.
  const parent = { traceId: 'a'.repeat(32), spanId: 'b'.repeat(16), sampled: true };
  const continued = await withRemoteSpan('process', formatTraceparent(parent), {}, () => Promise.resolve(currentTrace()));
  expect(continued?.traceId).toBe(parent.traceId);
  expect(continued?.spanId).not.toBe(parent.spanId);
  await tracing.shutdown();
});

it('would fail if the SDK were loaded (the mocks above are in force)', async () => {
  await expect(
    startTracing({
      config: parseConfig(tracingConfigShape, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' }),
      serviceName: 'news',
      logger: createLogger({ service: 'test', level: 'silent' }),
    }),
  ).rejects.toThrow(/was loaded/);
});
