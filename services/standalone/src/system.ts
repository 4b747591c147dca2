// The whole system in one process: the gateway, the job-status service and every product service (API and
// worker roles together) as units the gateway calls directly (inProcessUpstream), sharing one database pool, one
// event bus and one AI engine. It listens on two ports: the API and the metrics. Nothing is configured → embedded
// PostgreSQL, the in-process bus and offline AI; DATABASE_URL, KAFKA_BROKERS and ANTHROPIC_API_KEY switch each to
// the real thing. runSystem (@fin/http) composes the services' definitions on what this file makes.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { analysisService } from '@fin/analysis/service';
import { aiConfigShape, createAiEngine, modelBudgetFromConfig, type AiEngine } from '@fin/ai';
import { createKey, createTenant, findActiveKey, hashApiKey, isWellFormedApiKey, KeyStoreError } from '@fin/api-keys';
import { chatService } from '@fin/chat/service';
import { csv, int, logConfigShape, parseConfig } from '@fin/config';
import { API_SCOPES } from '@fin/contracts';
import { createCustomerToolsFromConfig, customerToolsConfigShape } from '@fin/customer-tools';
import { ensureDatabase, migrate, recordLocalDatabase, servicePool, type Pool } from '@fin/db';
import { edgarConfigShape, edgarOnline, filingsSource, type FilingsSource } from '@fin/edgar';
import { connectKafkaBus, createMemoryBus, kafkaConfigShape, type EventBus } from '@fin/events';
import { gatewayService, inProcess } from '@fin/gateway/service';
import { inMemoryFetch, type ConfigOf, type ServiceUnit, type SystemMember, type SystemShared } from '@fin/http';
import { jobsService } from '@fin/jobs/service';
import { mcpService, type McpApi } from '@fin/mcp/service';
import { metricsConfigShape } from '@fin/metrics';
import { newsService } from '@fin/news/service';
import { portalService } from '@fin/portal/service';
import { stockReportService } from '@fin/stock-report/service';
import { z } from 'zod';
import { startEmbeddedPostgres } from './embedded-postgres';

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
  /** How long open requests and streams may take to finish on Ctrl-C before their connections are closed. */
  SHUTDOWN_DRAIN_TIMEOUT_MS: int(0, 600_000).default(10_000),
};

/** What the services of the process share: runSystem hands each unit the part it takes. */
interface StandaloneShared {
  pool: Pool;
  bus: EventBus;
  engine: AiEngine;
  /** The product units run the process's outbox relays; the job-status service needs none of its own. */
  outboxRelay: false;
  /** How the MCP tools call the API: the gateway of this process, in memory. */
  api: McpApi;
  /**
   * SEC EDGAR for the filings routes and the reports' figures: EDGAR itself with EDGAR_USER_AGENT online, the bundled
   * sample (labelled `source: "sample"` in every answer) offline.
   */
  filings: FilingsSource;
}

/** What `npm start`'s banner says about the system it started. */
export interface StandaloneFacts {
  /** The development API key, created or checked against the database before the API listens. */
  apiKey: string;
  databaseUrl: string;
  /** Where the embedded database keeps its files (under DATA_DIR, or /var/lib/fin-api when run as root); none with DATABASE_URL. */
  embeddedDataDir?: string;
  bus: 'kafka' | 'in-process';
  offline: boolean;
  /** WEBHOOK_ALLOW_LOCAL_HTTP: webhooks and callbacks may go to http://localhost receivers (development only). */
  localWebhooks: boolean;
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
 * The development key: the one kept in DATA_DIR/dev-api-key while it still works and carries every scope, else a new
 * one (mode 600, git-ignored). A key made before a scope existed (filings) is replaced, so that npm start's key can
 * use every route; the old key keeps working with the scopes it had.
 */
async function developmentKey(pool: Pool, dataDir: string): Promise<string> {
  const file = path.join(dataDir, 'dev-api-key');
  if (existsSync(file)) {
    const key = readFileSync(file, 'utf8').trim();
    // The gateway's own definition of a working key: not revoked, not expired, its tenant enabled (and still there
    // after a database reset).
    const found = isWellFormedApiKey(key) ? await findActiveKey(pool, hashApiKey(key)) : null;
    if (found !== null && API_SCOPES.every((scope) => found.scopes.includes(scope))) return key;
  }
  const { rows } = await pool.query('SELECT 1 FROM tenants WHERE name = $1', [DEV_TENANT]);
  // Another process on the same database (a second replica, say) may create the tenant between the look and the
  // insert: its tenant is this one's too.
  if (rows.length === 0) {
    await createTenant(pool, DEV_TENANT).catch((error: unknown) => {
      if (!(error instanceof KeyStoreError && error.reason === 'conflict')) throw error;
    });
  }
  const { apiKey } = await createKey(pool, { tenant: DEV_TENANT, name: 'npm start' });
  mkdirSync(dataDir, { recursive: true });
  writeFileSync(file, `${apiKey}\n`, { mode: 0o600 });
  return apiKey;
}

/** The tenant of the development key. */
export const DEV_TENANT = 'local-dev';

/** Connections of the gateway's own pool in one process (key look-ups, counters, chat-stream leases). */
const GATEWAY_POOL_MAX = 4;

/** The bus is already connected: each service's config accepts an empty broker list here. */
function withBusApplied<S extends Shape>(shape: S) {
  const { KAFKA_BROKERS: _connected, ...rest } = shape;
  return { ...rest, KAFKA_BROKERS: csv().default([]) };
}

type Shape = Record<string, z.ZodType>;

/** What each service's environment adds in this process, beyond what they all get. */
function serviceEnvironment(name: string, settings: ConfigOf<typeof standaloneConfigShape>): Record<string, string> {
  switch (name) {
    // Every role of a product in one unit.
    case 'news':
      return { NEWS_ROLE: 'all' };
    case 'stock-report':
      return { STOCK_REPORT_ROLE: 'all' };
    case 'analysis':
      return { ANALYSIS_ROLE: 'all' };
    // The gateway on PORT, with a small pool of its own, with the session settings its pool has as deployed (its
    // counters' commits do not wait for the disk): authentication and counting are all it does there.
    case 'gateway':
      return { PORT: String(settings.PORT), HOST: settings.HOST, DATABASE_POOL_MAX: String(GATEWAY_POOL_MAX) };
    default:
      return {};
  }
}

/** The gateway of this process as the MCP tools call it: its app's in-memory fetch, for its URL, once it listens. */
function gatewayInMemory(): { api: McpApi; bind: (gateway: ServiceUnit, url: string) => void } {
  let bound: Required<McpApi> | undefined;
  const gateway = () => {
    if (bound === undefined) throw new Error('the MCP service was called before the gateway listened');
    return bound;
  };
  return {
    api: { baseUrl: () => gateway().baseUrl(), fetch: (input, init) => gateway().fetch(input, init) },
    bind: ({ edge }, url) => {
      if (edge === undefined) throw new TypeError('the gateway unit has no app');
      bound = { baseUrl: () => url, fetch: inMemoryFetch(edge.app, { origin: url }) };
    },
  };
}

/**
 * The services of `npm start`, in the order they are composed: the gateway last, in front of the units before it
 * (inProcess), the MCP tools calling the API as their caller through the gateway's own pipeline (key, scopes,
 * limits, cache and error bodies as for a direct request) in memory: no loopback socket.
 */
export const STANDALONE_SERVICES: readonly SystemMember<StandaloneShared>[] = [
  jobsService,
  newsService,
  stockReportService,
  analysisService,
  chatService,
  portalService,
  mcpService,
  gatewayService(inProcess),
];

export interface StandaloneOptions {
  /** Default: <repository>/.data */
  dataDir: string;
}

/**
 * What runSystem composes the services on: the database (the configured one, or an embedded PostgreSQL), migrated,
 * with the development key made before anything listens; the bus (Kafka when configured, the in-process one
 * otherwise); one AI engine (offline unless ANTHROPIC_API_KEY is set) offering each tenant's customer tools. `facts`
 * says what was started, for the banner; `bindGateway` gives the MCP tools the gateway once it listens.
 */
export function standaloneSystem({ dataDir }: StandaloneOptions): SystemShared<typeof standaloneConfigShape, StandaloneShared> & {
  facts(): StandaloneFacts;
  bindGateway: (gateway: ServiceUnit, url: string) => void;
} {
  let facts: StandaloneFacts | undefined;
  const gateway = gatewayInMemory();
  return {
    name: 'standalone',
    configShape: standaloneConfigShape,
    facts: () => {
      if (facts === undefined) throw new Error('the system has not started');
      return facts;
    },
    bindGateway: gateway.bind,
    async start({ config: settings, logger, env, resources }) {
      let databaseUrl = settings.DATABASE_URL;
      let embeddedDataDir: string | undefined;
      if (!databaseUrl) {
        const embedded = resources.own('embedded PostgreSQL', await startEmbeddedPostgres({ dataDir, logger }), (made) => made.stop());
        databaseUrl = embedded.url;
        embeddedDataDir = embedded.dataDir;
      } else {
        await ensureDatabase(databaseUrl);
      }
      const applied = await migrate({ databaseUrl });
      if (applied.length > 0) logger.info({ migrations: applied }, 'database migrated');
      const pool = resources.own(
        'database pool',
        servicePool(
          { DATABASE_URL: databaseUrl, DATABASE_POOL_MAX: settings.DATABASE_POOL_MAX },
          { applicationName: 'standalone', logger },
        ),
        (made) => made.end(),
      );
      // The admin CLI and `npm run migrate` find this database through the record (@fin/db local-database.ts).
      recordLocalDatabase(dataDir, {
        url: databaseUrl,
        pid: process.pid,
        embedded: embeddedDataDir !== undefined,
        startedAt: new Date().toISOString(),
      });
      // Before the API listens: a script that waits for the port finds the key in its file.
      const apiKey = await developmentKey(pool, dataDir);

      const shared: NodeJS.ProcessEnv = {
        ...env,
        DATABASE_URL: databaseUrl,
        INTERNAL_SIGNING_SECRET: runSecret(env, 'INTERNAL_SIGNING_SECRET'),
        PORTAL_SESSION_SECRET: runSecret(env, 'PORTAL_SESSION_SECRET'),
        HOST: '127.0.0.1',
        PORT: '0',
      };
      const kafka = parseConfig(withBusApplied(kafkaConfigShape('standalone')), shared);
      const bus = resources.own<EventBus>(
        'event bus',
        kafka.KAFKA_BROKERS.length > 0 ? await connectKafkaBus(kafka, logger) : createMemoryBus({ logger }),
        (made) => made.close(),
      );

      // Customer-tool secrets are sealed with a key kept in the data folder unless one is configured.
      shared.CUSTOMER_TOOLS_ENCRYPTION_KEY ||= customerToolsKey(dataDir);
      const customerToolsConfig = parseConfig(customerToolsConfigShape, shared);
      const aiConfig = parseConfig(aiConfigShape, shared);
      const edgarConfig = parseConfig({ ...aiConfigShape, ...edgarConfigShape }, shared);
      const filings = filingsSource({
        online: edgarOnline(edgarConfig),
        userAgent: edgarConfig.EDGAR_USER_AGENT,
        baseUrl: edgarConfig.EDGAR_BASE_URL,
        dataUrl: edgarConfig.EDGAR_DATA_URL,
        pool,
        logger,
      });
      const engine = resources.own(
        'AI engine',
        await createAiEngine({
          config: aiConfig,
          logger,
          filings,
          customerTools: createCustomerToolsFromConfig(customerToolsConfig, { pool, logger }),
          budget: modelBudgetFromConfig(aiConfig, { pool, logger }),
        }),
        (made) => made.close(),
      );

      facts = {
        apiKey,
        databaseUrl,
        ...(embeddedDataDir === undefined ? {} : { embeddedDataDir }),
        bus: kafka.KAFKA_BROKERS.length > 0 ? 'kafka' : 'in-process',
        offline: engine.offline,
        localWebhooks: customerToolsConfig.WEBHOOK_ALLOW_LOCAL_HTTP,
      };
      return {
        shared: { pool, bus, engine, outboxRelay: false, api: gateway.api, filings },
        // Local http: the portal's session cookie cannot be Secure (browsers keep Secure cookies on
        // http://127.0.0.1, but not on other local names), unless the environment says otherwise.
        configOf: ({ name, configShape }) =>
          parseConfig(withBusApplied(configShape), { PORTAL_COOKIE_SECURE: 'false', ...shared, ...serviceEnvironment(name, settings) }),
      };
    },
  };
}
