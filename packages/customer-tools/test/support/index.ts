// Test helpers for customer tools (imported as @fin/customer-tools/testing by this package's, the portal's and
// the system tests): a fake customer API over real HTTPS on loopback, its self-signed certificate, and canary
// listeners that count every TCP connection they receive, to prove a refused call never connected.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpsServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer as createTcpServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { generate } from 'selfsigned';

export interface TestCertificate {
  cert: string;
  key: string;
  /** The certificate written to a file, for NODE_EXTRA_CA_CERTS of a service process. */
  certFile: string;
}

let certificate: Promise<TestCertificate> | undefined;

/** A self-signed certificate for 127.0.0.1, ::1 and localhost, made once per process. */
export function testCertificate(): Promise<TestCertificate> {
  certificate ??= (async () => {
    const made = await generate([{ name: 'commonName', value: 'localhost' }], {
      keyType: 'ec',
      curve: 'P-256',
      notAfterDate: new Date(Date.now() + 24 * 3600 * 1000),
      extensions: [
        { name: 'basicConstraints', cA: true },
        {
          name: 'subjectAltName',
          altNames: [
            { type: 2, value: 'localhost' },
            { type: 7, ip: '127.0.0.1' },
            { type: 7, ip: '::1' },
          ],
        },
      ],
    });
    const dir = mkdtempSync(path.join(tmpdir(), 'fin-tools-cert-'));
    // Gone with the process (a Jest worker, a test's child): a run left one folder per worker in the temp folder.
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    const certFile = path.join(dir, 'cert.pem');
    writeFileSync(certFile, made.cert);
    return { cert: made.cert, key: made.private, certFile };
  })();
  return certificate;
}

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
}

export interface FakeCustomerApi {
  /** https://127.0.0.1:<port> */
  url: string;
  port: number;
  requests: ReceivedRequest[];
  close(): Promise<void>;
}

/**
 * An HTTPS API on 127.0.0.1 standing in for a customer's. Paths:
 * - `/hang`: never answers (until closed);
 * - `/huge?mb=N`: streams N MiB (default 10);
 * - `/redirect?to=URL`: 302 to URL;
 * - `/status/N`: answers status N with a JSON error;
 * - anything else: 200 with JSON echoing the method, the query and the body it received.
 */
export async function startFakeCustomerApi(): Promise<FakeCustomerApi> {
  const { cert, key } = await testCertificate();
  const requests: ReceivedRequest[] = [];
  const sockets = new Set<Socket>();
  const hanging = new Set<ServerResponse>();
  const server: Server = createHttpsServer({ cert, key }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      requests.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, body });
      const url = new URL(req.url ?? '/', 'https://fake.invalid');
      if (url.pathname === '/hang') {
        hanging.add(res);
        return;
      }
      if (url.pathname === '/huge') {
        streamHuge(res, Number(url.searchParams.get('mb') ?? '10'));
        return;
      }
      if (url.pathname === '/redirect') {
        res.writeHead(302, { location: url.searchParams.get('to') ?? '/' }).end();
        return;
      }
      const status = /^\/status\/(\d{3})$/.exec(url.pathname);
      if (status) {
        res.writeHead(Number(status[1]), { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'account not found' }));
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          method: req.method,
          query: Object.fromEntries(url.searchParams),
          body: body === '' ? null : (JSON.parse(body) as unknown),
          positions: [{ symbol: 'AAPL', shares: 120 }],
        }),
      );
    });
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `https://127.0.0.1:${port}`,
    port,
    requests,
    async close() {
      for (const res of hanging) res.destroy();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}

/** Writes `mb` MiB of JSON-ish filler, respecting back-pressure, until done or the client goes away. */
function streamHuge(res: ServerResponse, mb: number): void {
  const chunk = Buffer.alloc(64 * 1024, 'a');
  let left = Math.max(1, mb) * 16;
  res.writeHead(200, { 'content-type': 'text/plain' });
  const pump = (): void => {
    while (left > 0) {
      left -= 1;
      if (!res.write(chunk)) {
        res.once('drain', pump);
        return;
      }
    }
    res.end();
  };
  res.on('close', () => {
    left = 0;
  });
  pump();
}

export interface Canary {
  host: string;
  port: number;
  /** TCP connections received so far. */
  connections(): number;
  close(): Promise<void>;
}

/** A TCP listener that only counts connections (and drops them): a refused call must leave it at zero. */
export async function startCanary(host = '127.0.0.1'): Promise<Canary> {
  let count = 0;
  const sockets = new Set<Socket>();
  const server = createTcpServer((socket) => {
    count += 1;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.destroy();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    host,
    port,
    connections: () => count,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Whether this machine can listen on ::1 (containers sometimes have IPv6 off). */
export async function hasIpv6Loopback(): Promise<boolean> {
  const server = createTcpServer();
  return new Promise((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(0, '::1', () => server.close(() => resolve(true)));
  });
}
