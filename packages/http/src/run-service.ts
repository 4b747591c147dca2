// The one way a service process starts (every services/*/src/main.ts): config, logger, metrics listener, the
// service (its clients, its app, listening), the ordered shutdown on SIGTERM/SIGINT, then a line saying it is up.
// A start that fails is logged once, at fatal, and the process exits 1; a config that does not parse exits 78
// first, naming every bad variable (loadConfig).
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadConfig, redactConfig } from '@fin/config';
import { createLogger, logOptionsOf, type Logger } from '@fin/log';
import { startMetricsServer } from '@fin/metrics';
import { startTracing, tracingConfigShape } from '@fin/tracing';
import { z } from 'zod';
import { serveUnitOn, type ServiceUnit } from './handlers';
import type { Lifecycle } from './service-app';
import { closeStarted, createShutdown, onShutdownSignals, type Closer, type SignalSource } from './shutdown';

type Shape = Record<string, z.ZodType>;
type ConfigOf<S extends Shape> = z.output<z.ZodObject<S>>;

/** What a service's start returns: what runService (or the single-process setup) shuts down. */
export interface RunningService {
  lifecycle: Lifecycle;
  /** The HTTP server; a worker-only process has none. */
  server?: Server;
  /** Where the server listens, e.g. http://127.0.0.1:8081 (PORT 0 picks a free port). */
  url?: string;
  /** In shutdown order, after the HTTP server has drained. */
  closers: readonly Closer[];
}

/**
 * The variables runService itself reads, which every service's config shape has: logConfigShape, metricsConfigShape,
 * SHUTDOWN_DRAIN_TIMEOUT_MS and, where the service is behind a load balancer, SHUTDOWN_UNREADY_DELAY_MS.
 */
const processSettings = z.object({
  LOG_LEVEL: z.string(),
  ACCESS_LOG_SAMPLE_RATE: z.number(),
  ACCESS_LOG_SLOW_MS: z.number(),
  METRICS_PORT: z.number(),
  METRICS_HOST: z.string(),
  FIN_VERSION: z.string().optional(),
  FIN_COMMIT: z.string().optional(),
  SHUTDOWN_DRAIN_TIMEOUT_MS: z.number(),
  SHUTDOWN_UNREADY_DELAY_MS: z.number().default(0),
});
type ProcessSettings = z.input<typeof processSettings>;

export interface ServiceDefinition<S extends Shape> {
  /** The service's name, on every log line (`service`). */
  name: string;
  /** Its environment (config.ts), parsed once at start. */
  configShape: S;
  /** Runs on the parsed config before the start: warnings about settings that work against each other. */
  checkConfig?: (config: ConfigOf<S>, logger: Logger) => void;
  /**
   * A service behind the gateway: builds its unit (its clients, those not shared, and its handler table), which
   * runService serves on PORT behind the gateway's signed identity. The same function the single-process launcher
   * calls, so both run what a deployment runs.
   */
  unit?: (deps: { config: ConfigOf<S>; logger: Logger }) => Promise<ServiceUnit>;
  /** The gateway, which is in front of the others: builds its clients and its app and listens itself. */
  start?: (deps: { config: ConfigOf<S>; logger: Logger }) => Promise<RunningService>;
}

/** Where a unit listens, from the variables every service behind the gateway has. */
const unitSettings = z.object({ PORT: z.number(), HOST: z.string(), INTERNAL_SIGNING_SECRET: z.string() });

/** Serves the definition's unit, or runs its own start (the gateway). */
async function startDefinition<S extends Shape>(
  service: ServiceDefinition<S>,
  config: ConfigOf<S>,
  logger: Logger,
): Promise<RunningService> {
  if (service.start) return service.start({ config, logger });
  if (!service.unit) throw new TypeError(`service ${service.name} defines neither a unit nor a start`);
  return serveUnitOn(await service.unit({ config, logger }), unitSettings.parse(config), logger);
}

/** Where a test puts its own process: environment, exit and signals. */
export interface RunServiceOptions {
  env?: NodeJS.ProcessEnv;
  exit?: (code: number) => void;
  signals?: SignalSource;
}

/**
 * Runs a service as its own process. In order: parse the config (exit 78 naming every bad variable), create the
 * logger and log the config without secrets, start exporting traces when OTEL_EXPORTER_OTLP_ENDPOINT is set
 * (@fin/tracing), start the metrics listener (first: a port taken there fails before
 * anything needs closing), start the service, register the fixed shutdown (readiness off, the server drains,
 * the service's closers, the metrics listener, the trace exporter; a second signal exits at once), and log that it is up.
 * Any failure on the way is one fatal line and exit 1, after closing what had started.
 */
export async function runService<S extends Shape & { [K in keyof ProcessSettings]: z.ZodType<ProcessSettings[K]> }>(
  service: ServiceDefinition<S>,
  { env = process.env, exit = (code) => process.exit(code), signals = process }: RunServiceOptions = {},
): Promise<void> {
  const config = loadConfig(service.configShape, env);
  const tracingConfig = loadConfig(tracingConfigShape, env);
  const settings = processSettings.parse(config);
  const logger = createLogger({ service: service.name, ...logOptionsOf(settings) });
  logger.info({ config: redactConfig(service.configShape, config) }, 'starting');
  const started: Closer[] = [];
  // Last in the shutdown order, so that the spans of the shutdown itself are exported too.
  const traceExport: Closer[] = [];
  try {
    const tracing = await startTracing({ config: tracingConfig, serviceName: service.name, logger });
    traceExport.push({ name: 'trace exporter', close: () => tracing.shutdown() });
    service.checkConfig?.(config, logger);
    const metrics = await startMetricsServer({
      port: settings.METRICS_PORT,
      host: settings.METRICS_HOST,
      logger,
      build: { version: settings.FIN_VERSION, commit: settings.FIN_COMMIT },
    });
    started.push({ name: 'metrics listener', close: () => metrics.close() });
    const running = await startDefinition(service, config, logger);
    const servers = running.server ? [running.server] : [];
    // After listening, a server's error (accept failing for want of file descriptors, say) would otherwise be an
    // uncaught exception: it ends the process the same way as a failed start.
    for (const server of servers) server.on('error', (error) => fail(logger, exit, error, 'the HTTP server failed'));
    onShutdownSignals(
      createShutdown({
        logger,
        lifecycle: running.lifecycle,
        servers,
        unreadyDelayMs: settings.SHUTDOWN_UNREADY_DELAY_MS,
        drainTimeoutMs: settings.SHUTDOWN_DRAIN_TIMEOUT_MS,
        closers: [...running.closers, ...started, ...traceExport],
        exit,
      }),
      signals,
    );
    const port = (running.server?.address() as AddressInfo | null | undefined)?.port;
    logger.info({ ...(port === undefined ? {} : { port }), metrics: metrics.url }, 'ready');
  } catch (error) {
    await closeStarted([...started, ...traceExport]);
    fail(logger, exit, error, `${service.name} could not start`);
  }
}

function fail(logger: Logger, exit: (code: number) => void, error: unknown, message: string): void {
  logger.fatal({ err: error }, message);
  exit(1);
}
