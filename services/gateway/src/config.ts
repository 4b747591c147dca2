import { int, logConfigShape, port, secret, url } from '@fin/config';
import { metricsConfigShape } from '@fin/metrics';
import { z } from 'zod';
import { databasePoolConfigShape } from '@fin/db';
import { DEFAULT_TOKEN_ESTIMATES } from './rate-limit/token-budget';

const serviceUrl = () => url(['http', 'https']);

/** The gateway's environment. See docs/configuration.md and docs/gateway.md. */
export const gatewayConfigShape = {
  PORT: port().default(8080),
  HOST: z.string().default('127.0.0.1'),
  ...metricsConfigShape(9080),
  DATABASE_URL: url(['postgres', 'postgresql']),
  ...databasePoolConfigShape,
  ...logConfigShape(),
  /** Signs the identity headers the services verify; every service holds the same value. */
  INTERNAL_SIGNING_SECRET: secret(z.string().min(32, 'must be at least 32 characters (e.g. `openssl rand -hex 32`)')),

  // Where each service behind the gateway listens. The defaults are the local ports of `npm start`.
  NEWS_URL: serviceUrl().default('http://127.0.0.1:8081'),
  STOCK_REPORT_URL: serviceUrl().default('http://127.0.0.1:8082'),
  ANALYSIS_URL: serviceUrl().default('http://127.0.0.1:8083'),
  CHAT_URL: serviceUrl().default('http://127.0.0.1:8084'),
  JOBS_URL: serviceUrl().default('http://127.0.0.1:8085'),
  PORTAL_URL: serviceUrl().default('http://127.0.0.1:8086'),
  MCP_URL: serviceUrl().default('http://127.0.0.1:8087'),

  /** Time to open a connection to a service; a service that does not accept in time is unavailable (503). */
  UPSTREAM_CONNECT_TIMEOUT_MS: int(1, 60_000).default(2_000),
  /**
   * Time from sending a request to a service until its response headers arrive (504 beyond). Longer than the
   * slowest synchronous answer: a custom analysis answered inline takes up to 90 s.
   */
  UPSTREAM_RESPONSE_TIMEOUT_MS: int(1, 600_000).default(120_000),
  /** Longest silence inside a JSON response body. Event streams have no such limit: they may be quiet for long. */
  UPSTREAM_IDLE_TIMEOUT_MS: int(1, 600_000).default(30_000),
  /** Largest request body accepted (400 `validation_error` naming `body` beyond). */
  MAX_BODY_BYTES: int(1, 10 * 1024 * 1024).default(256 * 1024),
  /**
   * Time from a request's head to the end of its body: 400 naming `body` beyond, and the connection is closed.
   * 30 s carries 256 KiB at under 9 KB/s; a body trickled a byte at a time no longer holds a connection for 300 s.
   */
  BODY_TIMEOUT_MS: int(1_000, 600_000).default(30_000),

  /**
   * The chat service's CHAT_DETACH_GRACE_MS (how long a reply runs on after its client left); set it to the same
   * value. A chat slot whose client left stays taken that long (plus 1 s), until the reply has surely stopped.
   */
  CHAT_DETACH_GRACE_MS: int(0, 60_000).default(5_000),
  /**
   * Model tokens (all input, cache writes and reads included, and output) an account may use per UTC day; past it,
   * its new news, stock-report, analysis and chat requests get 429 until midnight UTC. Unset: no budget. A tenant's
   * `daily-tokens` override (admin CLI: limits set --product daily-tokens --per-day N) replaces it.
   */
  DAILY_TOKEN_BUDGET: int(1, 1_000_000_000_000).optional(),
  /**
   * Tokens the daily budget reserves for each admitted request of a product, until the job it made ends (a chat
   * reply: until it ends). Defaults: what a job of the product used in `npm run bench -- ai-cost`, rounded up
   * (docs/gateway.md#daily-token-budget). Requests at the edge of a budget take it past by at most one estimate.
   */
  DAILY_TOKEN_BUDGET_ESTIMATE_NEWS: int(1, 10_000_000).default(DEFAULT_TOKEN_ESTIMATES.news),
  DAILY_TOKEN_BUDGET_ESTIMATE_STOCK_REPORT: int(1, 10_000_000).default(DEFAULT_TOKEN_ESTIMATES['stock-report']),
  DAILY_TOKEN_BUDGET_ESTIMATE_ANALYSIS: int(1, 10_000_000).default(DEFAULT_TOKEN_ESTIMATES.analysis),
  DAILY_TOKEN_BUDGET_ESTIMATE_CHAT: int(1, 10_000_000).default(DEFAULT_TOKEN_ESTIMATES.chat),
  /**
   * How long a reservation that no job holds lives (a request still being answered, a chat reply, one left by a
   * gateway that died): past it, it no longer counts and the jobs service's reaper deletes it.
   */
  DAILY_TOKEN_BUDGET_RESERVATION_TTL_MS: int(10_000, 86_400_000).default(15 * 60_000),
  /** Failed authentications one client address may have per minute (per replica) before it gets 429 instead of lookups. */
  AUTH_FAILURES_PER_MINUTE: int(1, 1_000_000).default(30),
  /**
   * Proxies in front of the gateway that append the client's address to X-Forwarded-For (an ingress: 1). 0 uses
   * the connection's peer address. Only used to throttle failed authentications per client.
   */
  CLIENT_ADDRESS_HOPS: int(0, 10).default(0),

  /** On SIGTERM: time between failing readiness and refusing connections, for endpoints to update. */
  SHUTDOWN_UNREADY_DELAY_MS: int(0, 60_000).default(0),
  /** On SIGTERM: how long open requests and event streams may take to finish before they are cut. */
  SHUTDOWN_DRAIN_TIMEOUT_MS: int(0, 600_000).default(20_000),
  /** How long an idle client connection is kept open; longer than load balancers' idle timeout (often 60 s). */
  KEEP_ALIVE_TIMEOUT_MS: int(1_000, 600_000).default(65_000),
};

export type GatewayConfig = z.output<z.ZodObject<typeof gatewayConfigShape>>;
