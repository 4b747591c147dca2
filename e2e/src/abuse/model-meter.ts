// A meter in front of the fake model: every model call the services make passes through it on the wire, and it
// counts how many were started and how many were running at once (a call runs from its request until its
// response closes: completed, or aborted by the service).
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ModelMeter {
  /** The base URL to give the services instead of the fake model's. */
  readonly url: string;
  /** Model calls started since the start (or the last resetPeak). */
  readonly started: number;
  /** Model calls running now. */
  readonly running: number;
  /** The most model calls that were running at once since the start (or the last resetPeak). */
  readonly peak: number;
  /** Starts a new measurement: `started` from 0, `peak` from what is running now. */
  resetPeak(): void;
  close(): Promise<void>;
}

export async function startModelMeter(modelUrl: string): Promise<ModelMeter> {
  const target = new URL(modelUrl);
  let started = 0;
  let running = 0;
  let peak = 0;
  const server = http.createServer((req, res) => {
    started++;
    running++;
    peak = Math.max(peak, running);
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      running--;
    };
    const upstream = http.request(
      { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers, agent: false },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    // The service aborting its call closes this side: the fake model sees its request aborted too.
    res.on('close', () => {
      end();
      upstream.destroy();
    });
    req.pipe(upstream);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    get started() {
      return started;
    },
    get running() {
      return running;
    },
    get peak() {
      return peak;
    },
    resetPeak() {
      started = 0;
      peak = running;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
