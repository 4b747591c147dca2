import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLogger, type Logger } from '@fin/log';

export interface LogLine {
  level: string;
  msg: string;
  requestId?: string;
  [field: string]: unknown;
}

/** A real pino logger whose lines are kept for the test to read. */
export function captureLogger(): { logger: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const logger = createLogger({
    service: 'test',
    level: 'debug',
    destination: { write: (line: string) => lines.push(JSON.parse(line) as LogLine) },
  });
  return { logger, lines };
}

export interface Listening {
  server: http.Server;
  url: string;
  port: number;
  close(): Promise<void>;
}

/** Listens on a free port of 127.0.0.1; close() ends every connection. */
export async function listen(handler: http.RequestListener): Promise<Listening> {
  const server = http.createServer(handler);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    server,
    port,
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        if (!server.listening) {
          resolve();
          return;
        }
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** A promise and the function that resolves it, for steps the test controls. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}
