// The whole system in one process: the gateway, the job-status service and every product service (API and
// worker roles together) as units the gateway calls directly (inProcessUpstream), sharing one database pool, one
// event bus and one AI engine. It listens on two ports: the API and the metrics. Nothing is configured → embedded PostgreSQL, the in-process bus and offline
// AI; DATABASE_URL, KAFKA_BROKERS and ANTHROPIC_API_KEY switch each to the real thing.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import path from 'node:path';
import { analysisConfigShape } from '@fin/analysis/config';
import { createAnalysisUnit } from '@fin/analysis/service';
import { aiConfigShape, createAiEngine, modelBudgetFromConfig, type AiEngine } from '@fin/ai';
import { chatConfigShape } from '@fin/chat/config';
import { createChatUnit } from '@fin/chat/service';
import { csv, int, logConfigShape, parseConfig } from '@fin/config';
import { createCustomerToolsFromConfig, customerToolsConfigShape } from '@fin/customer-tools';
import { createPool, ensureDatabase, migrate, type Pool } from '@fin/db';
import { connectKafkaBus, createMemoryBus, kafkaConfigShape, type EventBus } from '@fin/events';
import { gatewayConfigShape } from '@fin/gateway/config';
import { startGateway, type GatewayService } from '@fin/gateway/service';
import { inProcessUpstream } from '@fin/gateway/upstream';
import { closeStarted, createShutdown, type Closer, type Lifecycle, type ServiceUnit } from '@fin/http';
import { jobsConfigShape } from '@fin/jobs/config';
import { createJobsUnit } from '@fin/jobs/service';
import { createLogger, logOptionsOf, type Logger } from '@fin/log';
import { mcpConfigShape } from '@fin/mcp/config';
import { createMcpUnit } from '@fin/mcp/service';
import { metricsConfigShape, startMetricsServer } from '@fin/metrics';
import { newsConfigShape } from '@fin/news/config';
import { createNewsUnit } from '@fin/news/service';
import { portalConfigShape } from '@fin/portal/config';
import { createPortalUnit } from '@fin/portal/service';
import { stockReportConfigShape } from '@fin/stock-report/config';
import { createStockReportUnit } from '@fin/stock-report/service';
import { z } from 'zod';
import { startEmbeddedPostgres, type EmbeddedDatabase } from './embedded-postgres';

/** The launcher's own settings; every service's variables (docs/configuration.md) apply as well. */
const standaloneConfigShape = {
  /** The gateway's port: the API's address is http://HOST:PORT. */
  PORT: z.coerce.number().int().min(0).max(65_535).default(8080),
  HOST: z.string().default('127.0.0.1'),
  /** Unset: an embedded PostgreSQL in DATA_DIR/postgres. */
  DATABASE_URL: z.string().optional(),
  /** The one pool every service of the process shares (as DATABASE_POOL_MAX sizes each service's own elsewhere). */
  DATABASE_POOL_MAX: int(1, 500).default(20),
  /** Unset: the in-process event bus. */
  KAFKA_BROKERS: csv().optional(),
  /** Where the embedded database, its password and the development API key are kept (git-ignored). */
  DATA_DIR: z.string().optional(),
  /** LOG_LEVEL, ACCESS_LOG_SAMPLE_RATE, ACCESS_LOG_SLOW_MS: as for every service. */
  ...logConfigShape(),
  /** One Prometheus listener for the whole process (every service's metrics, one registry). */
  ...metricsConfigShape(9090),
};

export interface Standalone {
  /** The API's base URL (the gateway). */
  url: string;
  /** GET here for the Prometheus metrics of every service in the process. */
  metricsUrl: string;
  databaseUrl: string;
  embedded: boolean;
  /** Where the embedded database keeps its files (under DATA_DIR, or /var/lib/fin-api when run as root). */
  embeddedDataDir?: string;
  bus: 'kafka' | 'in-process';
  offline: boolean;
  /** WEBHOOK_ALLOW_LOCAL_HTTP: webhooks and callbacks may go to http://localhost receivers (development only). */
  localWebhooks: boolean;
  pool: Pool;
  /** The gateway: the only server of the process besides the metrics listener (and its in-memory fetch). */
  gateway: GatewayService;
  /** The services behind it, in shutdown order: the product services, then jobs. */
  units: ServiceUnit[];
  /** Shared resources, closed after every unit: engine, bus, pool, embedded database. */
  closers: Closer[];
}

export interface StandaloneOptions {
  env?: NodeJS.ProcessEnv;
  /** Default: <repository>/.data */
  dataDir?: string;
  logger?: Logger;
}

/** The repository root (services/standalone/src or dist → three levels up). */
export const REPOSITORY_ROOT = path.resolve(__dirname, '..', '..', '..');

/**
 * The key that seals customer-tool secrets: generated at the first start and kept in the data folder (mode 600),
 * since tools stored under it must stay readable after a restart.
 */
function customerToolsKey(dataDir: string): string {
  const file = path.join(dataDir, 'customer-tools-key');
  if (!existsSync(file)) {
    mkdirSync(dataDir, { recursive: true });
    writeFileSync(file, `local-1:${randomBytes(32).toString('base64')}\n`, { mode: 0o600 });
  }
  return readFileSync(file, 'utf8').trim();
}

/**
 * A secret for this run only, unless the environment sets one (checked like any other: a placeholder from
 * .env.example is refused, naming the variable). INTERNAL_SIGNING_SECRET: every service is in this process, so
 * none needs to be told it. PORTAL_SESSION_SECRET: portal sign-ins last until the next start.
 */
function runSecret(env: NodeJS.ProcessEnv, name: 'INTERNAL_SIGNING_SECRET' | 'PORTAL_SESSION_SECRET'): string {
  const given = env[name];
  return given && given.length >= 32 ? given : randomBytes(32).toString('hex');
}

/**
 * Starts everything and resolves when the gateway listens. On a failure half-way, what already started is
 * stopped again before the error is thrown.
 */
export async function startStandalone({ env = process.env, dataDir, logger }: StandaloneOptions = {}): Promise<Standalone> {
  const settings = parseConfig(standaloneConfigShape, env);
  const log = logger ?? createLogger({ service: 'standalone', ...logOptionsOf(settings) });
  const loggerFor = (service: string) => (logger ? logger.child({ service }) : createLogger({ service, ...logOptionsOf(settings) }));
  const started: Closer[] = [];
  const units: ServiceUnit[] = [];
  let gatewayUnit: GatewayService | undefined;
  const unwind = async () => {
    const closers = [
      ...(gatewayUnit ? [serverCloser(gatewayUnit.server), ...gatewayUnit.closers] : []),
      ...[...units].reverse().flatMap((unit) => unit.closers),
    ];
    for (const closer of closers) await closer.close().catch(() => undefined);
    await closeStarted(started.reverse());
  };

  try {
    // 1. Database: the configured one, or an embedded PostgreSQL.
    let database: EmbeddedDatabase | undefined;
    let databaseUrl = settings.DATABASE_URL;
    if (!databaseUrl) {
      const embedded = await startEmbeddedPostgres({ dataDir: dataDir ?? path.join(REPOSITORY_ROOT, '.data'), logger: log });
      database = embedded;
      started.push({ name: 'embedded PostgreSQL', close: () => embedded.stop() });
      databaseUrl = embedded.url;
    } else {
      await ensureDatabase(databaseUrl);
    }
    const applied = await migrate({ databaseUrl });
    if (applied.length > 0) log.info({ migrations: applied }, 'database migrated');
    const pool = createPool({ connectionString: databaseUrl, applicationName: 'standalone', max: settings.DATABASE_POOL_MAX });
    started.push({ name: 'database pool', close: () => pool.end() });

    // 2. Events: Kafka when configured, the in-process bus otherwise.
    const shared: NodeJS.ProcessEnv = {
      ...env,
      DATABASE_URL: databaseUrl,
      INTERNAL_SIGNING_SECRET: runSecret(env, 'INTERNAL_SIGNING_SECRET'),
      PORTAL_SESSION_SECRET: runSecret(env, 'PORTAL_SESSION_SECRET'),
      HOST: '127.0.0.1',
      PORT: '0',
    };
    const kafka = parseConfig(withBusApplied(kafkaConfigShape('standalone')), shared);
    let bus: EventBus;
    if (kafka.KAFKA_BROKERS.length > 0) bus = await connectKafkaBus(kafka, log);
    else bus = createMemoryBus({ logger: log });
    started.push({ name: 'event bus', close: () => bus.close() });

    // 3. One AI engine for every product (offline unless ANTHROPIC_API_KEY is set), offering each tenant's
    // customer tools; their secrets are sealed with a key kept in the data folder unless one is configured.
    shared.CUSTOMER_TOOLS_ENCRYPTION_KEY ||= customerToolsKey(dataDir ?? path.join(REPOSITORY_ROOT, '.data'));
    const customerToolsConfig = parseConfig(customerToolsConfigShape, shared);
    const customerTools = createCustomerToolsFromConfig(customerToolsConfig, { pool, logger: log });
    const aiConfig = parseConfig(aiConfigShape, shared);
    const engine: AiEngine = await createAiEngine({
      config: aiConfig,
      logger: log,
      customerTools,
      budget: modelBudgetFromConfig(aiConfig, { pool, logger: log }),
    });
    started.push({ name: 'AI engine', close: () => engine.close() });

    const serviceConfig = <S extends Shape>(shape: S, extra: Record<string, string> = {}) =>
      parseConfig(withBusApplied(shape), { ...shared, ...extra });

    // 4. The services behind the gateway: units of this process, which the gateway calls directly (no port).
    const jobs = await createJobsUnit({ config: serviceConfig(jobsConfigShape), logger: loggerFor('jobs'), bus, pool, outboxRelay: false });
    units.push(jobs);
    const news = await createNewsUnit({
      config: serviceConfig(newsConfigShape, { NEWS_ROLE: 'all' }),
      logger: loggerFor('news'),
      pool,
      bus,
      engine,
    });
    units.push(news);
    const stockReport = await createStockReportUnit({
      config: serviceConfig(stockReportConfigShape, { STOCK_REPORT_ROLE: 'all' }),
      logger: loggerFor('stock-report'),
      pool,
      bus,
      engine,
    });
    units.push(stockReport);
    const analysis = await createAnalysisUnit({
      config: serviceConfig(analysisConfigShape, { ANALYSIS_ROLE: 'all' }),
      logger: loggerFor('analysis'),
      pool,
      bus,
      engine,
    });
    units.push(analysis);
    const chat = await createChatUnit({ config: serviceConfig(chatConfigShape), logger: loggerFor('chat'), pool, engine });
    units.push(chat);
    const portal = await createPortalUnit({
      // Local http: the session cookie cannot be Secure (browsers keep Secure cookies on http://127.0.0.1, but not
      // on other local names).
      config: parseConfig(portalConfigShape, { PORTAL_COOKIE_SECURE: 'false', ...shared }),
      logger: loggerFor('portal'),
      pool,
    });
    units.push(portal);
    // The MCP tools call the API as their caller through the gateway's own pipeline (key, scopes, limits, cache and
    // error bodies as for a direct request), in memory: the gateway's fetch, no loopback socket. The gateway is made
    // after the units it calls; no tool runs before it listens.
    const gatewayOf = () => {
      if (gatewayUnit === undefined) throw new Error('the MCP service was called before the gateway listened');
      return gatewayUnit;
    };
    const mcp = await createMcpUnit({
      config: serviceConfig(mcpConfigShape),
      logger: loggerFor('mcp'),
      api: { baseUrl: () => gatewayOf().url, fetch: (input, init) => gatewayOf().fetch(input, init) },
    });
    units.push(mcp);
    for (const unit of units) await unit.start();

    const metrics = await startMetricsServer({ port: settings.METRICS_PORT, host: settings.METRICS_HOST, logger: log });
    started.push({ name: 'metrics listener', close: () => metrics.close() });

    // 5. The gateway on PORT, calling them. It has a small pool of its own, with the session settings its pool has
    // as deployed (its counters' commits do not wait for the disk): authentication and counting are all it does there.
    const gatewayConfig = parseConfig(gatewayConfigShape, {
      ...shared,
      PORT: String(settings.PORT),
      HOST: settings.HOST,
      DATABASE_POOL_MAX: String(GATEWAY_POOL_MAX),
    });
    const gateway = await startGateway({
      config: gatewayConfig,
      logger: loggerFor('gateway'),
      upstream: () =>
        inProcessUpstream({
          units: { jobs, news, 'stock-report': stockReport, analysis, chat, portal, mcp },
          limits: { maxBodyBytes: gatewayConfig.MAX_BODY_BYTES },
        }),
    });
    gatewayUnit = gateway;

    return {
      url: gateway.url,
      metricsUrl: metrics.url,
      databaseUrl,
      embedded: database !== undefined,
      ...(database ? { embeddedDataDir: database.dataDir } : {}),
      bus: kafka.KAFKA_BROKERS.length > 0 ? 'kafka' : 'in-process',
      offline: engine.offline,
      localWebhooks: customerToolsConfig.WEBHOOK_ALLOW_LOCAL_HTTP,
      pool,
      gateway,
      units: [...units].reverse(),
      closers: [...started].reverse(),
    };
  } catch (error) {
    await unwind();
    throw error;
  }
}

/**
 * The shutdown of the whole process, in ARCHITECTURE.md's order: every service's readiness off; the servers stop
 * accepting and their open requests and streams drain (gateway and services together, since a stream passes
 * through both); then each service's closers (workers finish or hand back their jobs, consumers stop, relays
 * stop); then the engine, the bus, the pool and last the embedded database. `exit` receives 0 or 1.
 */
export function createStandaloneShutdown(
  system: Standalone,
  logger: Logger,
  exit: (code: number) => void,
  drainTimeoutMs = 10_000,
): (signal: string) => Promise<void> {
  const lifecycles: Lifecycle[] = [system.gateway.lifecycle, ...system.units.map((unit) => unit.lifecycle)];
  return createShutdown({
    logger,
    lifecycle: {
      get shuttingDown() {
        return lifecycles.some((lifecycle) => lifecycle.shuttingDown);
      },
      beginShutdown: () => lifecycles.forEach((lifecycle) => lifecycle.beginShutdown()),
    },
    servers: [system.gateway.server],
    drainTimeoutMs,
    closers: [...system.gateway.closers, ...system.units.flatMap((unit) => unit.closers), ...system.closers],
    exit,
  });
}

type Shape = Record<string, z.ZodType>;

/** Connections of the gateway's own pool in one process (key look-ups, counters, chat-stream leases). */
const GATEWAY_POOL_MAX = 4;

/** The bus is already connected: each service's config accepts an empty broker list here. */
function withBusApplied<S extends Shape>(shape: S) {
  const { KAFKA_BROKERS: _connected, ...rest } = shape;
  return { ...rest, KAFKA_BROKERS: csv().default([]) };
}

function serverCloser(server: Server): Closer {
  return {
    name: 'http server',
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
