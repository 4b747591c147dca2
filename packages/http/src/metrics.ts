// Request rate, latency and status per route template, and open event streams, for the Prometheus catalog in
// @fin/metrics. Routes are labelled by their template (/api/jobs/:job_type/:job_id/status), never by the raw
// path, so ids cannot grow the number of series; requests that match no route share one label.
import { httpRequestDuration, httpRequests, sseStreamsOpen } from '@fin/metrics';
import type { Request, Response } from 'express';

const UNMATCHED_ROUTE = 'unmatched';

function routeOf(req: Request): string {
  const template: unknown = (req.route as { path?: unknown } | undefined)?.path;
  if (typeof template === 'string') return `${req.baseUrl}${template}`;
  // A mounted sub-application or prefix (the gateway's /portal pass-through) is labelled by its mount point.
  return req.baseUrl || UNMATCHED_ROUTE;
}

interface Series {
  count: { inc(): void };
  duration: { observe(seconds: number): void };
}

// The labelled series, looked up once per label set: prom-client's own lookup validates and copies the labels
// on every call. Bounded like the series themselves (services × methods × route templates × statuses).
const series = new Map<string, Series>();

/** Counts one answered request and observes its duration (called by requestContext when the response closes). */
export function recordRequest(service: string, req: Request, res: Response, seconds: number): void {
  const route = routeOf(req);
  const status = res.statusCode;
  const key = `${service} ${req.method} ${status} ${route}`;
  let entry = series.get(key);
  if (entry === undefined) {
    entry = {
      count: httpRequests.labels({ service, method: req.method, route, status: String(status) }),
      duration: httpRequestDuration.labels({ service, method: req.method, route }),
    };
    series.set(key, entry);
  }
  entry.count.inc();
  entry.duration.observe(seconds);
}

/** Counts an event stream as open until its response closes (finished, or the client went away). */
export function trackEventStream(service: string, res: Response): void {
  sseStreamsOpen.inc({ service });
  res.once('close', () => sseStreamsOpen.dec({ service }));
}
