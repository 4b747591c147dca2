import { loadPrompt } from '@fin/ai';
import { jobUrls, NewsRequest, NewsResponse, type AsyncJobResponse } from '@fin/contracts';
import type { Pool } from '@fin/db';
import { badRequest, callerOf, createServiceApp, route, verifyIdentity, type Lifecycle } from '@fin/http';
import { cacheKeyFor, submitJob, type SubmitOutcome } from '@fin/job-kit';
import type { Logger } from '@fin/log';
import type express from 'express';

export interface NewsAppDeps {
  pool: Pool;
  logger: Logger;
  signingSecret: string;
  lifecycle?: Lifecycle;
  maxAttempts?: number;
}

const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

/** `Idempotency-Key`: 1–255 visible ASCII characters, optional. */
export function idempotencyKeyOf(req: express.Request): string | undefined {
  const key = req.header('idempotency-key');
  if (key === undefined) return undefined;
  if (!IDEMPOTENCY_KEY.test(key)) throw badRequest('Idempotency-Key: must be 1 to 255 visible ASCII characters.');
  return key;
}

/** `Cache-Control: no-cache` (or no-store) asks for a fresh run instead of a cached result. */
export function bypassesCache(req: express.Request): boolean {
  return /\bno-(cache|store)\b/i.test(req.header('cache-control') ?? '');
}

/** Sets Cache-Status (RFC 9211) and, for a hit, Age; returns the HTTP status of the answer. */
export function describeCache(res: express.Response, outcome: SubmitOutcome, bypass: boolean): void {
  if (outcome.kind === 'cached') {
    const now = Date.now();
    const ttl = Math.max(0, Math.floor((outcome.expiresAt.getTime() - now) / 1000));
    res.setHeader('Cache-Status', `fin-api; hit; ttl=${ttl}`);
    res.setHeader('Age', String(Math.max(0, Math.floor((now - outcome.producedAt.getTime()) / 1000))));
  } else if (outcome.kind !== 'replayed') {
    res.setHeader('Cache-Status', `fin-api; fwd=${bypass ? 'bypass' : 'miss'}${outcome.kind === 'joined' ? '; collapsed' : ''}`);
  }
}

/**
 * The news API role: validates the request, then answers from the cache (200) or with the job to poll (202).
 * Tenant identity comes from the gateway's signed headers.
 */
export function createApp({ pool, logger, signingSecret, lifecycle, maxAttempts = 3 }: NewsAppDeps): express.Express {
  const promptVersion = loadPrompt('news').id;
  return createServiceApp({
    name: 'news',
    logger,
    lifecycle,
    readiness: async () => {
      await pool.query('SELECT 1');
    },
    routes: (app) => {
      app.post(
        '/api/products/news',
        verifyIdentity(signingSecret, { logger }),
        route({ body: NewsRequest }, async ({ body }, { req, res }) => {
          const { tenantId } = callerOf(res);
          const bypass = bypassesCache(req);
          const request = { ...body } as Record<string, unknown>;
          const cacheKey = cacheKeyFor({
            jobType: 'news',
            parameters: { symbols: [...body.symbols].sort(), n: body.n, language: body.language, prompt: promptVersion },
            tenantId,
            data: body.data,
          });
          const outcome = await submitJob(pool, {
            tenantId,
            jobType: 'news',
            request,
            cacheKey,
            bypassCache: bypass,
            idempotencyKey: idempotencyKeyOf(req),
            maxAttempts,
          });
          describeCache(res, outcome, bypass);
          if (outcome.kind === 'cached' || (outcome.kind === 'replayed' && outcome.result)) {
            const result = outcome.kind === 'cached' ? outcome.result : outcome.result!;
            return NewsResponse.parse({ job_id: outcome.jobId, status: 'completed', from_cache: outcome.kind === 'cached', ...result });
          }
          const urls = jobUrls('news', outcome.jobId);
          res.status(202).setHeader('Location', urls.status_url);
          const envelope: AsyncJobResponse = { job_id: outcome.jobId, status: 'pending', from_cache: false, ...urls };
          return envelope;
        }),
      );
    },
  });
}
