// The metrics listener: GET /metrics in the Prometheus text format, on a port of its own, so the scrape
// endpoint is never reachable through the gateway's public port or the ingress. It also answers GET /healthz,
// which gives processes without an API port (the worker roles) a liveness probe: 200 while the process runs,
// 503 once a part of it has stopped for good (liveness.ts).
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { port } from '@fin/config';
import type { Logger } from '@fin/log';
import { z } from 'zod';
import { buildConfigShape, recordBuildInfo } from './build-info';
import { registry } from './catalog';
import { livenessProblems, notLive } from './liveness';

/**
 * METRICS_PORT and METRICS_HOST. Each service has its own default port (its PORT + 1000: gateway 9080, news
 * 9081, …) so services run side by side on a laptop without clashing; 0 picks a free port.
 */
export function metricsConfigShape(defaultPort: number) {
  return {
    METRICS_PORT: port().default(defaultPort),
    /** 0.0.0.0 in containers, so Prometheus can scrape the pod's address. */
    METRICS_HOST: z.string().default('127.0.0.1'),
    /** fin_build_info's version and commit (set in the image). */
    ...buildConfigShape,
  };
}

export interface MetricsServer {
  server: Server;
  /** e.g. http://127.0.0.1:9081/metrics */
  url: string;
  close(): Promise<void>;
}

export async function startMetricsServer({
  port: listenPort,
  host,
  logger,
  build = {},
}: {
  port: number;
  host: string;
  logger: Logger;
  /** What fin_build_info reports (FIN_VERSION, FIN_COMMIT); the package version when not given. */
  build?: { version?: string | undefined; commit?: string | undefined };
}): Promise<MetricsServer> {
  recordBuildInfo(build);
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'GET' && path === '/healthz') {
      const problems = livenessProblems();
      if (problems.length === 0) res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
      else res.writeHead(503, { 'content-type': 'application/json' }).end(JSON.stringify(notLive(problems)));
      return;
    }
    if (req.method !== 'GET' || path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('Not found: metrics are at GET /metrics, liveness at GET /healthz\n');
      return;
    }
    registry.metrics().then(
      (body) => res.writeHead(200, { 'content-type': registry.contentType }).end(body),
      (error: unknown) => {
        logger.warn({ err: error }, 'collecting metrics failed');
        res.writeHead(500, { 'content-type': 'text/plain' }).end('metrics collection failed\n');
      },
    );
  });
  server.listen(listenPort, host);
  try {
    await Promise.race([once(server, 'listening'), once(server, 'error').then(([error]) => Promise.reject(error as Error))]);
  } catch (error) {
    const code = (error as { code?: string }).code;
    throw new Error(
      code === 'EADDRINUSE'
        ? `METRICS_PORT ${listenPort} is in use on ${host}; set METRICS_PORT to a free port (0 picks one).`
        : `The metrics listener could not start: ${String(error)}`,
      { cause: error },
    );
  }
  const url = `http://${host}:${(server.address() as AddressInfo).port}/metrics`;
  logger.info({ url }, 'metrics listening');
  return {
    server,
    url,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
