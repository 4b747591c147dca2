// Test helpers for webhooks (imported as @fin/webhooks/testing by this package's, the portal's, the standalone
// and the system tests): a receiver over real HTTPS on loopback whose answers a test scripts, and a verifier of
// Standard Webhooks signatures written from the specification, independently of the code that signs.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer as createHttpServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { testCertificate } from '@fin/customer-tools/testing';

export interface ReceivedDelivery {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  receivedAt: number;
}

/** What the receiver answers a request with: a status, or `hang` (no answer until the test ends). */
export type ReceiverAnswer = number | 'hang';

export interface FakeReceiver {
  /** https://127.0.0.1:<port> (http://127.0.0.1:<port> with `plainHttp`) */
  url: string;
  received: ReceivedDelivery[];
  /** Answers the next requests with these, in order; then as told at the start (204 by default). */
  answer(...answers: ReceiverAnswer[]): void;
  /** Forgets what was received and the answers not given yet. */
  reset(): void;
  /** Resolves once `count` requests have arrived (and match `where`), or rejects after `timeoutMs`. */
  waitFor(count: number, timeoutMs?: number, where?: (delivery: ReceivedDelivery) => boolean): Promise<ReceivedDelivery[]>;
  close(): Promise<void>;
}

/**
 * `otherwise`: the answer to a request no scripted answer is left for (default 204; `hang` for a receiver that never
 * answers). `plainHttp`: a receiver as a developer runs one on a laptop, plain http on loopback.
 */
export async function startFakeReceiver({
  otherwise = 204,
  plainHttp = false,
}: { otherwise?: ReceiverAnswer; plainHttp?: boolean } = {}): Promise<FakeReceiver> {
  const { cert, key } = await testCertificate();
  const received: ReceivedDelivery[] = [];
  const queue: ReceiverAnswer[] = [];
  const sockets = new Set<Socket>();
  const hanging = new Set<ServerResponse>();
  const waiters = new Set<() => void>();
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received.push({ path: req.url ?? '/', headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), receivedAt: Date.now() });
      for (const wake of waiters) wake();
      const answer = queue.shift() ?? otherwise;
      if (answer === 'hang') {
        hanging.add(res);
        return;
      }
      if (answer === 204) res.writeHead(204).end();
      else res.writeHead(answer, { 'content-type': 'text/plain' }).end(`answer ${answer}`);
    });
  };
  const server: Server | ReturnType<typeof createHttpServer> = plainHttp ? createHttpServer(handle) : createServer({ cert, key }, handle);
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `${plainHttp ? 'http' : 'https'}://127.0.0.1:${port}`,
    received,
    answer: (...answers) => queue.push(...answers),
    reset() {
      received.splice(0);
      queue.splice(0);
    },
    waitFor(count, timeoutMs = 30_000, where = () => true) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const matching = received.filter(where);
          if (matching.length < count) return false;
          resolve(matching);
          return true;
        };
        if (check()) return;
        const timer = setTimeout(() => {
          waiters.delete(wake);
          reject(new Error(`expected ${count} deliveries within ${timeoutMs} ms, got ${received.filter(where).length}`));
        }, timeoutMs);
        const wake = () => {
          if (!check()) return;
          clearTimeout(timer);
          waiters.delete(wake);
        };
        waiters.add(wake);
      });
    },
    async close() {
      for (const res of hanging) res.destroy();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}

/**
 * Verifies a delivery as the Standard Webhooks specification tells a receiver to: the signed content is
 * `${webhook-id}.${webhook-timestamp}.${body}`, the key is the base64 after `whsec_`, the signature list is
 * space-separated `v1,<base64>` entries of which one must match (compared in constant time), and the timestamp must
 * be within `toleranceSeconds` of now. Returns why it fails, or null when it verifies.
 */
export function standardWebhooksProblem(secret: string, headers: IncomingHttpHeaders, body: string, toleranceSeconds = 300): string | null {
  const id = headers['webhook-id'];
  const timestamp = headers['webhook-timestamp'];
  const signatures = headers['webhook-signature'];
  if (typeof id !== 'string' || typeof timestamp !== 'string' || typeof signatures !== 'string') return 'missing headers';
  if (!/^\d+$/.test(timestamp)) return 'bad timestamp';
  if (Math.abs(Date.now() / 1000 - Number(timestamp)) > toleranceSeconds) return 'timestamp out of tolerance';
  if (!secret.startsWith('whsec_')) return 'not a whsec_ secret';
  const expected = createHmac('sha256', Buffer.from(secret.slice('whsec_'.length), 'base64'))
    .update(`${id}.${timestamp}.${body}`)
    .digest();
  for (const entry of signatures.split(' ')) {
    const [version, value] = entry.split(',');
    if (version !== 'v1' || value === undefined) continue;
    const given = Buffer.from(value, 'base64');
    if (given.length === expected.length && timingSafeEqual(given, expected)) return null;
  }
  return 'no signature matches';
}
