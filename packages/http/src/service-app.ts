// The skeleton every HTTP service shares: request context, health probes, JSON bodies, the routes, the 404 and
// the one error translator, always in that order.
import type { Logger } from '@fin/log';
import { livenessProblems, notLive } from '@fin/metrics';
import express from 'express';
import { hasRequestBody, jsonBody } from './body';
import { closeAfterAnswer } from './connection';
import { errorHandler, notFoundHandler } from './error-handler';
import { loggerOf, requestContext } from './request-context';

/** Whether the process is shutting down. Readiness fails from the moment shutdown begins. */
export interface Lifecycle {
  readonly shuttingDown: boolean;
  beginShutdown(): void;
}

/**
 * `onShutdown` runs once, when shutdown begins: a service whose event streams would not end on their own starts
 * ending them there, while the server drains (the drain only waits for open connections to finish).
 */
export function createLifecycle(onShutdown?: () => void): Lifecycle {
  let shuttingDown = false;
  return {
    get shuttingDown() {
      return shuttingDown;
    },
    beginShutdown() {
      if (shuttingDown) return;
      shuttingDown = true;
      onShutdown?.();
    },
  };
}

const DEFAULT_READINESS_TIMEOUT_MS = 2_000;

export interface ServiceAppOptions {
  /** The service's name, e.g. "news". */
  name: string;
  logger: Logger;
  /** Resolves when the service's dependencies are reachable (e.g. `SELECT 1`); throws otherwise. */
  readiness: () => Promise<void>;
  /** Shared with the shutdown sequence; readiness fails once shutdown begins. */
  lifecycle?: Lifecycle;
  /** A readiness check that takes longer counts as failed. */
  readinessTimeoutMs?: number;
  /** Largest JSON body in bytes; false when the service reads bodies itself (the gateway forwards them raw). */
  jsonBodyLimit?: number | false;
  /** Mounts the service's routes. */
  routes: (app: express.Express) => void;
}

function withTimeout(check: () => Promise<void>, timeoutMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`readiness check did not finish within ${timeoutMs} ms`)), timeoutMs);
  });
  return Promise.race([check(), timeout]).finally(() => clearTimeout(timer));
}

const notReady = (detail: string) => ({ detail, status_code: 503, type: 'service_unavailable' as const });

/**
 * An express app with `/healthz` (200 while the process runs, 503 once a part of it stopped for good: see
 * @fin/metrics' liveness), `/readyz` (200 when `readiness` resolves,
 * 503 in the error body while it throws or once shutdown has begun), request ids and access logs, JSON
 * bodies, the service's routes, a 404 for everything else and the error translator. It never listens.
 */
/** A service's express app, named here so that services can declare it without depending on express's types. */
export type ServiceApp = express.Express;

export function createServiceApp(options: ServiceAppOptions): ServiceApp {
  const {
    name,
    logger,
    readiness,
    lifecycle = createLifecycle(),
    readinessTimeoutMs = DEFAULT_READINESS_TIMEOUT_MS,
    jsonBodyLimit,
    routes,
  } = options;
  const app = express();
  app.disable('x-powered-by');
  // Answers are per-tenant and mostly uncacheable: hashing every body for an ETag costs more than it saves.
  app.set('etag', false);
  // Behind the gateway and the ingress; client addresses come from X-Forwarded-For where they matter.
  app.set('trust proxy', false);

  app.use(requestContext({ logger, quietPaths: ['/healthz', '/readyz'], metricsService: name }));

  // A probe takes no body: one that announces a body is refused at once, before a byte of it is read, so that a
  // body trickled at a byte a second holds no connection (the gateway's body deadline covers its routes, not these).
  const refuseBody: express.RequestHandler = (req, res, next) => {
    if (!hasRequestBody(req)) {
      next();
      return;
    }
    closeAfterAnswer(req, res);
    res.status(400).json({ detail: 'body: a probe takes no request body', status_code: 400, type: 'validation_error' });
  };
  app.use('/healthz', refuseBody);
  app.use('/readyz', refuseBody);
  app.get('/healthz', (_req, res) => {
    const problems = livenessProblems();
    if (problems.length === 0) res.json({ status: 'ok' });
    else res.status(503).json(notLive(problems));
  });
  app.get('/readyz', async (_req, res) => {
    if (lifecycle.shuttingDown) {
      res.status(503).json(notReady(`The ${name} service is shutting down.`));
      return;
    }
    try {
      await withTimeout(readiness, readinessTimeoutMs);
      res.json({ status: 'ready' });
    } catch (error) {
      loggerOf(res, logger).warn({ err: error }, 'readiness check failed');
      res.status(503).json(notReady(`The ${name} service is not ready.`));
    }
  });

  if (jsonBodyLimit !== false) app.use(jsonBody(jsonBodyLimit === undefined ? {} : { limit: jsonBodyLimit }));
  routes(app);
  app.use(notFoundHandler());
  app.use(errorHandler({ logger }));
  return app;
}
