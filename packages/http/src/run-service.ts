// The two ways a process starts, and the one thing either composes: a service definition. runService runs one
// service as its process (every services/*/src/main.ts, the gateway too); runSystem runs several in one process
// (`npm start`), where only the edge (the gateway) listens and calls the others in memory. Both, in order: parse the
// config (exit 78 naming every bad variable), the logger, the config logged without secrets, trace export when
// OTEL_EXPORTER_OTLP_ENDPOINT is set (@fin/tracing), the metrics listener (first: a port taken there fails before
// anything needs closing), each definition's checkConfig, the units, listening, the fixed shutdown on SIGTERM/SIGINT
// (readiness off, the servers drain, the units' closers, what the process shares, the metrics listener, the trace
// exporter; a second signal exits at once), then a line saying it is up. A failure on the way is one fatal line and
// exit 1, after closing what had started.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConfigError, configRefusal, loadConfig, redactConfig } from '@fin/config';
import { createLogger, logOptionsOf, type Logger } from '@fin/log';
import { startMetricsServer } from '@fin/metrics';
import { startTracing, tracingConfigShape } from '@fin/tracing';
import { z } from 'zod';
import { serveUnit } from './handlers';
import { createResources, type Resources } from './resources';
import type { Lifecycle } from './service-app';
import { closeStarted, createShutdown, onShutdownSignals, type Closer, type SignalSource } from './shutdown';
import type { RunningService, ServiceUnit } from './unit';

type Shape = Record<string, z.ZodType>;
export type ConfigOf<S extends Shape> = z.output<z.ZodObject<S>>;

/**
 * What a definition's unit is made from: its config and logger; in one process (runSystem) also what the process
 * shares (each absent one the unit makes from its config, and closes) and the units composed before it.
 */
export type UnitDeps<Config, Shared = object> = {
  config: Config;
  logger: Logger;
  /** The units composed before this one, by name (in one process; none in a process of its own). */
  units: ReadonlyMap<string, ServiceUnit>;
} & Partial<Shared>;

/** A service, as both launchers and the tests compose it. */
export interface ServiceDefinition<S extends Shape = Shape, Shared = object, Config = ConfigOf<S>> {
  /** The service's name, on every log line (`service`). */
  name: string;
  /** Its environment (config.ts), parsed once at start. */
  configShape: S;
  /** Runs on the parsed config before the start: warnings about settings that work against each other. */
  checkConfig?(config: Config, logger: Logger): void;
  /** Builds the unit: its clients (those not shared), its handlers, its workers. Makes it; starts nothing. */
  unit(deps: UnitDeps<Config, Shared>): Promise<ServiceUnit>;
}

/**
 * A definition as one process composes it beside others of other shapes. Its config is whatever its own shape
 * parses to (configOf), so the list names no config type; what the process shares must be what each one takes.
 */
export type SystemMember<Shared> = ServiceDefinition<Shape, Shared, never>;

/** Where a unit listens, from the variables every service has. */
const unitSettings = z.object({ PORT: z.number(), HOST: z.string(), INTERNAL_SIGNING_SECRET: z.string() });

export interface ServeDefinitionOptions<S extends Shape, Shared> {
  config: ConfigOf<S>;
  logger: Logger;
  /** What a test shares with the unit (its database pool, a memory bus, an AI engine on a fake model). */
  shared?: Partial<Shared>;
}

/**
 * A definition's unit, composed and served on its config's PORT (its workers started first): what runService does
 * after its checks, and how a test runs a service. When the start fails, what the unit made is closed.
 */
export async function serveDefinition<S extends Shape, Shared>(
  definition: ServiceDefinition<S, Shared>,
  { config, logger, shared = {} }: ServeDefinitionOptions<S, Shared>,
): Promise<RunningService> {
  const unit = await definition.unit(Object.assign({}, shared, { config, logger, units: new Map<string, ServiceUnit>() }));
  const { PORT, HOST, INTERNAL_SIGNING_SECRET } = unitSettings.parse(config);
  return serveUnit(unit, { port: PORT, host: HOST, signingSecret: INTERNAL_SIGNING_SECRET, logger });
}

/**
 * The variables the launchers themselves read, which every service's config shape (and the system's) has:
 * logConfigShape, metricsConfigShape, SHUTDOWN_DRAIN_TIMEOUT_MS and, where the process is behind a load balancer,
 * SHUTDOWN_UNREADY_DELAY_MS.
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
/** A shape with the process settings: what a launcher accepts. */
type ProcessShape = Shape & { [K in keyof ProcessSettings]: z.ZodType<ProcessSettings[K]> };

/** Where a test puts its own process: environment, exit and signals. */
export interface RunServiceOptions {
  env?: NodeJS.ProcessEnv;
  exit?: (code: number) => void;
  signals?: SignalSource;
}

/** What is up once a launcher resolves. */
export interface Launched {
  /** Where the process answers (the service's, or in one process the edge's, server); none for a worker. */
  url?: string;
  /** The process's Prometheus metrics. */
  metricsUrl: string;
}

interface Composed {
  /** In shutdown order. */
  services: RunningService[];
}

/** The steps both launchers share; `compose` makes and starts the units once the process is set up. */
async function launch<S extends ProcessShape>(
  name: string,
  configShape: S,
  { env = process.env, exit = (code) => process.exit(code), signals = process }: RunServiceOptions,
  compose: (deps: { config: ConfigOf<S>; logger: Logger; env: NodeJS.ProcessEnv; resources: Resources }) => Promise<Composed>,
): Promise<Launched | undefined> {
  const config = loadConfig(configShape, env);
  const tracingConfig = loadConfig(tracingConfigShape, env);
  const settings = processSettings.parse(config);
  const logger = createLogger({ service: name, ...logOptionsOf(settings) });
  logger.info({ config: redactConfig(configShape, config) }, 'starting');
  const started: Closer[] = [];
  // What the process shares, made by `compose` before the units that use it: closed after them, the last made first.
  const resources = createResources();
  // Last in the shutdown order, so that the spans of the shutdown itself are exported too.
  const traceExport: Closer[] = [];
  try {
    const tracing = await startTracing({ config: tracingConfig, serviceName: name, logger });
    traceExport.push({ name: 'trace exporter', close: () => tracing.shutdown() });
    const metrics = await startMetricsServer({
      port: settings.METRICS_PORT,
      host: settings.METRICS_HOST,
      logger,
      build: { version: settings.FIN_VERSION, commit: settings.FIN_COMMIT },
    });
    started.push({ name: 'metrics listener', close: () => metrics.close() });
    const { services } = await compose({ config, logger, env, resources });
    const servers = services.flatMap((service) => (service.server ? [service.server] : []));
    // After listening, a server's error (accept failing for want of file descriptors, say) would otherwise be an
    // uncaught exception: it ends the process the same way as a failed start.
    for (const server of servers) server.on('error', (error) => fail(logger, exit, error, 'the HTTP server failed'));
    onShutdownSignals(
      createShutdown({
        logger,
        lifecycle: allOf(services.map((service) => service.lifecycle)),
        servers,
        unreadyDelayMs: settings.SHUTDOWN_UNREADY_DELAY_MS,
        drainTimeoutMs: settings.SHUTDOWN_DRAIN_TIMEOUT_MS,
        closers: [...services.flatMap((service) => service.closers), ...resources.closers(), ...started, ...traceExport],
        exit,
      }),
      signals,
    );
    const url = services.find((service) => service.url !== undefined)?.url;
    const port = portOf(servers[0]);
    logger.info({ ...(port === undefined ? {} : { port }), metrics: metrics.url }, 'ready');
    return { ...(url === undefined ? {} : { url }), metricsUrl: metrics.url };
  } catch (error) {
    await closeStarted([...resources.closers(), ...started, ...traceExport]);
    if (error instanceof ConfigError) {
      // A service's config in one process is parsed once what it depends on is known (the database's URL).
      process.stderr.write(configRefusal(error));
      exit(78);
    } else fail(logger, exit, error, `${name} could not start`);
    return undefined;
  }
}

/**
 * Runs one service as its own process: its unit served on PORT behind the gateway's signed identity (the gateway
 * itself, the edge, with its own app).
 */
export async function runService<S extends ProcessShape, Shared>(
  definition: ServiceDefinition<S, Shared>,
  options: RunServiceOptions = {},
): Promise<Launched | undefined> {
  return launch(definition.name, definition.configShape, options, async ({ config, logger }) => {
    definition.checkConfig?.(config, logger);
    return { services: [await serveDefinition(definition, { config, logger })] };
  });
}

/** What several services share in one process, and how each one's config is read there. */
export interface SystemShared<S extends ProcessShape, Shared> {
  /** The process's name on its log lines and traces. */
  name: string;
  /** The process's own variables, with the process settings. */
  configShape: S;
  /**
   * Makes what the services share (each thing recorded in `resources`: closed after every unit, the last made
   * first, and also when the start fails half-way), and says how each service's config is read in this process
   * (its environment completed with what the process decided: the database's URL, run secrets).
   */
  start(deps: { config: ConfigOf<S>; logger: Logger; env: NodeJS.ProcessEnv; resources: Resources }): Promise<{
    shared: Shared;
    configOf: (definition: SystemMember<Shared>) => ConfigOf<Shape>;
  }>;
}

/**
 * Runs several services in one process. The definitions are composed in order, each given what the process shares
 * and the units before it; the edge (the gateway, last) is served on its config's PORT, and the others, which it
 * calls in memory, start without a port of their own. The shutdown drains the edge, then closes the edge's and the
 * units' closers, the last composed first, then what the process shares.
 */
export async function runSystem<S extends ProcessShape, Shared>(
  definitions: readonly SystemMember<Shared>[],
  system: SystemShared<S, Shared>,
  options: RunServiceOptions = {},
): Promise<(Launched & { units: ReadonlyMap<string, ServiceUnit> }) | undefined> {
  const units: ServiceUnit[] = [];
  const launched = await launch(system.name, system.configShape, options, async ({ config, logger, env, resources }) => {
    const { shared, configOf } = await system.start({ config, logger, env, resources });
    try {
      const edges: { unit: ServiceUnit; config: unknown }[] = [];
      for (const definition of definitions) {
        // Parsed from the definition's own shape: the config its checkConfig and unit take (SystemMember).
        const unitConfig = configOf(definition) as never;
        const unitLogger = logger.child({ service: definition.name });
        definition.checkConfig?.(unitConfig, unitLogger);
        const before = new Map(units.map((unit) => [unit.name, unit]));
        const unit = await definition.unit({ ...shared, config: unitConfig, logger: unitLogger, units: before });
        units.push(unit);
        if (unit.edge) edges.push({ unit, config: unitConfig });
      }
      const behind = units.filter((unit) => unit.edge === undefined);
      for (const unit of behind) await unit.start();
      const served: RunningService[] = [];
      for (const edge of edges) {
        const { PORT, HOST, INTERNAL_SIGNING_SECRET } = unitSettings.parse(edge.config);
        served.push(await serveUnit(edge.unit, { port: PORT, host: HOST, signingSecret: INTERNAL_SIGNING_SECRET, logger }));
      }
      const inMemory = [...behind].reverse().map((unit): RunningService => ({ lifecycle: unit.lifecycle, closers: unit.closers }));
      return { services: [...served, ...inMemory] };
    } catch (error) {
      await closeStarted([...units].reverse().flatMap((unit) => unit.closers));
      throw error;
    }
  });
  return launched && { ...launched, units: new Map(units.map((unit) => [unit.name, unit])) };
}

/** One lifecycle for several services: shutting down once any is, and all told together. */
function allOf(lifecycles: readonly Lifecycle[]): Lifecycle {
  if (lifecycles.length === 1 && lifecycles[0]) return lifecycles[0];
  return {
    get shuttingDown() {
      return lifecycles.some((lifecycle) => lifecycle.shuttingDown);
    },
    beginShutdown: () => lifecycles.forEach((lifecycle) => lifecycle.beginShutdown()),
  };
}

function portOf(server: Server | undefined): number | undefined {
  return (server?.address() as AddressInfo | null | undefined)?.port;
}

function fail(logger: Logger, exit: (code: number) => void, error: unknown, message: string): void {
  logger.fatal({ err: error }, message);
  exit(1);
}
