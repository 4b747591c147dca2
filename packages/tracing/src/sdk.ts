// Starting and stopping the OpenTelemetry SDK. Its modules are imported only when tracing is on, so a service
// without an endpoint never loads them (and pays nothing at start or per request).
import type { Logger } from '@fin/log';
import { trace, type Tracer } from '@opentelemetry/api';
import { exportHeaders, tracesEndpoint, type SamplerName, type TracingConfig } from './config';
import { useTracer } from './spans';

export interface Tracing {
  /** Where spans are exported, or undefined: tracing is off. */
  readonly endpoint: string | undefined;
  /** Exports the spans still buffered and stops the SDK (the last step of a service's shutdown). */
  shutdown(): Promise<void>;
}

export interface StartTracingOptions {
  config: TracingConfig;
  /** The service's name: OTEL_SERVICE_NAME, when set, wins. */
  serviceName: string;
  logger: Logger;
}

const OFF: Tracing = { endpoint: undefined, shutdown: () => Promise.resolve() };

/** Longest the final export may take at shutdown: a collector that is down must not hold the process. */
const SHUTDOWN_EXPORT_TIMEOUT_MS = 5_000;

/** Resolves false after `ms` (a timer that does not keep the process alive). */
function timeout(ms: number): Promise<false> {
  return new Promise((resolve) => setTimeout(() => resolve(false), ms).unref());
}

/** Starts exporting spans when the configuration names an endpoint; otherwise returns at once, loading nothing. */
export async function startTracing({ config, serviceName, logger }: StartTracingOptions): Promise<Tracing> {
  const endpoint = tracesEndpoint(config);
  if (endpoint === undefined) return OFF;
  const [sdk, { OTLPTraceExporter }, { resourceFromAttributes }, { ATTR_SERVICE_NAME }] = await Promise.all([
    loadSdk(),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/semantic-conventions'),
  ]);
  const exporter = new OTLPTraceExporter({
    url: endpoint,
    headers: exportHeaders(config),
    timeoutMillis: config.OTEL_EXPORTER_OTLP_TRACES_TIMEOUT ?? config.OTEL_EXPORTER_OTLP_TIMEOUT,
  });
  const processor = new sdk.BatchSpanProcessor({
    exporter,
    scheduledDelayMillis: config.OTEL_BSP_SCHEDULE_DELAY,
    exportTimeoutMillis: config.OTEL_BSP_EXPORT_TIMEOUT,
    maxQueueSize: config.OTEL_BSP_MAX_QUEUE_SIZE,
    maxExportBatchSize: Math.min(config.OTEL_BSP_MAX_EXPORT_BATCH_SIZE, config.OTEL_BSP_MAX_QUEUE_SIZE),
  });
  const provider = new sdk.TracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: config.OTEL_SERVICE_NAME ?? serviceName }),
    sampler: samplerOf(sdk, config.OTEL_TRACES_SAMPLER, config.OTEL_TRACES_SAMPLER_ARG),
    spanProcessors: [processor],
  });
  // Registered globally too, so a library that traces through @opentelemetry/api reports to the same place.
  trace.setGlobalTracerProvider(provider);
  const tracer: Tracer = provider.getTracer('@fin/tracing');
  useTracer(tracer);
  logger.info({ endpoint: new URL(endpoint).origin, sampler: config.OTEL_TRACES_SAMPLER }, 'exporting traces over OTLP/HTTP');
  let stopped: Promise<void> | undefined;
  return {
    endpoint,
    shutdown: () =>
      (stopped ??= (async () => {
        useTracer(undefined);
        try {
          const done = await Promise.race([provider.shutdown().then(() => true), timeout(SHUTDOWN_EXPORT_TIMEOUT_MS)]);
          if (!done) logger.warn({ timeoutMs: SHUTDOWN_EXPORT_TIMEOUT_MS }, 'the last spans were not exported in time');
        } catch (error) {
          logger.warn({ err: error }, 'the last spans could not be exported');
        }
        trace.disable();
      })()),
  };
}

type Sdk = Pick<
  Awaited<ReturnType<typeof loadSdk>>,
  'AlwaysOnSampler' | 'AlwaysOffSampler' | 'TraceIdRatioBasedSampler' | 'ParentBasedSampler'
>;

function loadSdk() {
  return import('@opentelemetry/sdk-trace');
}

function samplerOf(sdk: Sdk, name: SamplerName, ratio: number) {
  const root = {
    always_on: () => new sdk.AlwaysOnSampler(),
    always_off: () => new sdk.AlwaysOffSampler(),
    traceidratio: () => new sdk.TraceIdRatioBasedSampler(ratio),
  };
  switch (name) {
    case 'always_on':
    case 'always_off':
    case 'traceidratio':
      return root[name]();
    case 'parentbased_always_on':
      return new sdk.ParentBasedSampler({ root: root.always_on() });
    case 'parentbased_always_off':
      return new sdk.ParentBasedSampler({ root: root.always_off() });
    case 'parentbased_traceidratio':
      return new sdk.ParentBasedSampler({ root: root.traceidratio() });
  }
}
