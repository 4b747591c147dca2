// The gateway as a definition: authentication, rate limits and its app, the edge of the system, in front of an
// Upstream that is passed in: over HTTP to the services' processes (main.ts), or the units of the same process
// (npm start, services/standalone).
import { servicePool, sessionPoolOf, type Pool } from '@fin/db';
import { answerClientErrors, createLifecycle, type Closer, type ServiceDefinition, type ServiceUnit, type UnitDeps } from '@fin/http';
import { createApp } from './app';
import { createAuthenticator } from './auth';
import { gatewayConfigShape, type GatewayConfig } from './config';
import { createServicePools } from './proxy/service-pools';
import { createRateLimits } from './rate-limit';
import { UPSTREAM_NAMES, type UpstreamName } from './routes';
import { httpUpstream, inProcessUpstream, type Upstream } from './upstream';

/** Where the gateway sends what it admitted: made once the units before it (in one process) are composed. */
export type UpstreamOf = (deps: UnitDeps<GatewayConfig>) => Upstream;

/** The services as processes of their own, at the URLs of the config, each identity signed. */
export const overHttp: UpstreamOf = ({ config, logger }) =>
  httpUpstream({
    pools: createServicePools(
      {
        news: config.NEWS_URL,
        'stock-report': config.STOCK_REPORT_URL,
        analysis: config.ANALYSIS_URL,
        chat: config.CHAT_URL,
        jobs: config.JOBS_URL,
        portal: config.PORTAL_URL,
        mcp: config.MCP_URL,
      },
      { connectTimeoutMs: config.UPSTREAM_CONNECT_TIMEOUT_MS },
    ),
    signingSecret: config.INTERNAL_SIGNING_SECRET,
    logger,
    limits: {
      maxBodyBytes: config.MAX_BODY_BYTES,
      responseTimeoutMs: config.UPSTREAM_RESPONSE_TIMEOUT_MS,
      idleTimeoutMs: config.UPSTREAM_IDLE_TIMEOUT_MS,
    },
  });

/** The services as units of this process (npm start), composed before the gateway: called in memory. */
export const inProcess: UpstreamOf = ({ config, units }) => {
  const byName = (name: UpstreamName): ServiceUnit => {
    const unit = units.get(name);
    if (unit === undefined) throw new Error(`the ${name} service must be composed before the gateway`);
    return unit;
  };
  const behind = Object.fromEntries(UPSTREAM_NAMES.map((name) => [name, byName(name)])) as Record<UpstreamName, ServiceUnit>;
  return inProcessUpstream({ units: behind, limits: { maxBodyBytes: config.MAX_BODY_BYTES } });
};

/** The gateway in front of `upstream`. */
export function gatewayService(upstream: UpstreamOf = overHttp): ServiceDefinition<typeof gatewayConfigShape> {
  return { name: 'gateway', configShape: gatewayConfigShape, unit: (deps) => Promise.resolve(createGatewayUnit(deps, upstream(deps))) };
}

/**
 * The gateway's pool is its own in every shape (npm start too, beside the pool its services share), so that its
 * session settings hold wherever it runs.
 */
function createGatewayUnit({ config, logger }: UnitDeps<GatewayConfig>, upstream: Upstream): ServiceUnit {
  const pool: Pool = servicePool(config, {
    applicationName: 'gateway',
    logger,
    // The gateway writes only short-lived state: rate-limit counters, chat-stream leases, keys' last use. Its
    // commits need not wait for the WAL to reach the disk (docs/benchmarks.md has the figures). What a
    // database crash can then lose is the last few hundred milliseconds of counts and
    // leases: a few more requests admitted in that window, a lease that expires on its own. Atomicity and
    // what every replica sees are unchanged.
    sessionSettings: { synchronous_commit: 'off' },
  });
  // LISTEN api_key_changed is session state: on DATABASE_DIRECT_URL when the main URL is a pooler's.
  const session = sessionPoolOf(pool, {
    directUrl: config.DATABASE_DIRECT_URL,
    applicationName: 'gateway',
    onIdleError: (error) => logger.warn({ err: error }, 'idle direct database connection failed'),
  });
  const authenticator = createAuthenticator({
    pool,
    listenPool: session.pool,
    logger,
    failuresPerClient: config.AUTH_FAILURES_PER_MINUTE,
  });
  const rateLimits = createRateLimits({
    pool,
    logger,
    chatDetachGraceMs: config.CHAT_DETACH_GRACE_MS,
    ...(config.DAILY_TOKEN_BUDGET === undefined ? {} : { dailyTokenBudget: config.DAILY_TOKEN_BUDGET }),
    tokenEstimates: {
      news: config.DAILY_TOKEN_BUDGET_ESTIMATE_NEWS,
      'stock-report': config.DAILY_TOKEN_BUDGET_ESTIMATE_STOCK_REPORT,
      analysis: config.DAILY_TOKEN_BUDGET_ESTIMATE_ANALYSIS,
      chat: config.DAILY_TOKEN_BUDGET_ESTIMATE_CHAT,
    },
    tokenReservationTtlMs: config.DAILY_TOKEN_BUDGET_RESERVATION_TTL_MS,
  });
  const lifecycle = createLifecycle();
  // Streams have drained (or been cut) by the time these run: their chat slots are released before the limiter closes.
  const closers: Closer[] = [
    { name: 'authenticator', close: () => authenticator.close() },
    { name: 'rate limits', close: () => rateLimits.close() },
    { name: 'upstream', close: () => upstream.close() },
  ];
  if (session.pool !== pool) closers.push({ name: 'direct database pool', close: () => session.close() });
  closers.push({ name: 'database pool', close: () => pool.end() });

  const readiness = async () => {
    await pool.query('SELECT 1');
  };
  const app = createApp({
    logger,
    authenticator,
    rateLimits,
    upstream,
    readiness,
    lifecycle,
    trustedProxyHops: config.CLIENT_ADDRESS_HOPS,
    bodyTimeoutMs: config.BODY_TIMEOUT_MS,
  });
  return {
    name: 'gateway',
    handlers: {},
    edge: {
      app,
      configure: (server) => {
        // What Node's parser refuses (oversized or malformed heads) gets the spec's error body too, not a bare 400/431.
        answerClientErrors(server, logger);
        // Idle keep-alive connections outlive the clients' and load balancers' own idle timeouts (60 s on most), so
        // it is never the gateway that closes a connection a client is about to reuse.
        server.keepAliveTimeout = config.KEEP_ALIVE_TIMEOUT_MS;
        server.headersTimeout = config.KEEP_ALIVE_TIMEOUT_MS + 1_000;
      },
    },
    readiness,
    lifecycle,
    start: () => Promise.resolve(),
    closers,
  };
}
