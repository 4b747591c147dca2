// The floor under memory per open stream (chat-stream --breakdown): the least a Node process can hold per open
// event stream, measured the same way as the services. BENCH_ROLE picks the process:
//   server: a bare node:http server that answers every request with an event stream and holds it open;
//   proxy:  a bare node:http server that forwards every request to BENCH_UPSTREAM_URL over an undici Pool (the
//           gateway's HTTP client) and pipes the event stream back: the two connections a gateway holds per
//           stream, and nothing else (no express, no authentication, no logging).
// Memory is read with the services' hook (memory-hook.cjs, preloaded by the runner).
import http from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';
import { REPO_ROOT } from '../lib/processes';

interface UndiciPool {
  request(options: {
    method: string;
    path: string;
    headers: Record<string, string>;
  }): Promise<{ body: NodeJS.ReadableStream & { destroy(): void } }>;
}

// undici is the gateway's dependency, not the benchmarks': loaded from there, the copy the gateway uses.
const { Pool } = createRequire(path.join(REPO_ROOT, 'services/gateway/package.json'))('undici') as {
  Pool: new (origin: string) => UndiciPool;
};

function serve(handler: http.RequestListener): void {
  const server = http.createServer(handler);
  server.keepAliveTimeout = 600_000;
  server.listen(Number(process.env.PORT), '127.0.0.1');
  process.once('SIGTERM', () => {
    server.closeAllConnections();
    server.close(() => process.exit(0));
  });
}

const role = process.env.BENCH_ROLE;
if (role === 'server') {
  serve((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('retry: 1000\n\nevent: token\ndata: {"content":"held"}\n\n');
  });
} else if (role === 'proxy') {
  const upstream = process.env.BENCH_UPSTREAM_URL;
  if (upstream === undefined) throw new Error('BENCH_UPSTREAM_URL is required');
  const pool = new Pool(upstream);
  serve((req, res) => {
    void pool.request({ method: 'GET', path: req.url ?? '/', headers: {} }).then(
      ({ body }) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        body.on('data', (chunk: Buffer) => res.write(chunk));
        body.on('error', () => res.destroy());
        res.once('close', () => body.destroy());
      },
      () => res.destroy(),
    );
  });
} else {
  throw new Error(`BENCH_ROLE must be server or proxy, got ${role}`);
}
