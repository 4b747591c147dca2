// Request rate, latency and status per route template, and open event streams, for the Prometheus catalog in
// @fin/metrics. Routes are labelled by their template (/api/jobs/:job_type/:job_id/status), never by the raw
// path, so ids cannot grow the number of series; requests that match no route share one label.
import { httpRequestDuration, httpRequests, sseStreamsOpen } from '@fin/metrics';
import type { Request, RequestHandler, Response } from 'express';

export const UNMATCHED_ROUTE = 'unmatched';

function routeOf(req: Request): string {
  const template: unknown = (req.route as { path?: unknown } | undefined)?.path;
  if (typeof template === 'string') return `${req.baseUrl}${template}`;
  // A mounted sub-application or prefix (the gateway's /portal pass-through) is labelled by its mount point.
  return req.baseUrl || UNMATCHED_ROUTE;
}

export function httpMetrics(service: string): RequestHandler {
  return (req, res, next) => {
    const stop = httpRequestDuration.startTimer();
    res.once('close', () => {
      const route = routeOf(req);
      stop({ service, method: req.method, route });
      httpRequests.inc({ service, method: req.method, route, status: String(res.statusCode) });
    });
    next();
  };
}

/** Counts an event stream as open until its response closes (finished, or the client went away). */
export function trackEventStream(service: string, res: Response): void {
  sseStreamsOpen.inc({ service });
  res.once('close', () => sseStreamsOpen.dec({ service }));
}
