import { randomUUID } from 'node:crypto';
import type { Pool } from '@fin/db';
import type { Logger } from '@fin/log';
import express, { type ErrorRequestHandler, type RequestHandler } from 'express';

export interface GatewayDeps {
  pool: Pool;
  logger: Logger;
}

interface ErrorBody {
  detail: string;
  status_code: number;
  type: string;
}

function errorBody(status_code: number, type: string, detail: string): ErrorBody {
  return { detail, status_code, type };
}

/** The gateway's HTTP application. Pure: it never listens, so tests hand it to supertest. */
export function createApp({ pool, logger }: GatewayDeps): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', false);

  const requestId: RequestHandler = (req, res, next) => {
    const incoming = req.header('x-request-id');
    const id = incoming && /^[\w.-]{1,128}$/.test(incoming) ? incoming : randomUUID();
    res.setHeader('X-Request-Id', id);
    res.locals.requestId = id;
    next();
  };
  app.use(requestId);

  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/readyz', async (_req, res) => {
    try {
      await pool.query('SELECT 1');
      res.json({ status: 'ready' });
    } catch (error) {
      logger.warn({ err: error }, 'readiness check failed: database unreachable');
      res.status(503).json(errorBody(503, 'service_unavailable', 'The database is unreachable.'));
    }
  });

  app.use(express.json({ limit: '256kb' }));

  app.use((req, res) => {
    res.status(404).json(errorBody(404, 'not_found', `No route for ${req.method} ${req.path}.`));
  });

  const translate: ErrorRequestHandler = (error: { status?: number; type?: string }, _req, res, _next) => {
    if (error.type === 'entity.parse.failed') {
      res.status(400).json(errorBody(400, 'validation_error', 'The request body is not valid JSON.'));
      return;
    }
    if (error.type === 'entity.too.large') {
      res.status(413).json(errorBody(413, 'payload_too_large', 'The request body exceeds 256 KB.'));
      return;
    }
    logger.error({ err: error, requestId: res.locals.requestId as string }, 'unhandled error');
    res.status(500).json(errorBody(500, 'internal_error', 'An internal error occurred.'));
  };
  app.use(translate);
  return app;
}
