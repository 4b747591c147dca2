// What the gateway guarantees about a client's connection (src/connection-guards.ts): forwarding headers are its
// own unless a trusted proxy set them; a body has a bounded time to arrive; a request refused before its body was
// read ends its connection. Over raw sockets, since HTTP clients do not trickle bodies or keep reading after an answer.
import { connect, type Socket } from 'node:net';
import { ErrorBody } from '@fin/contracts';
import request from 'supertest';
import { KEYS, listen, startHarness, type Harness } from './support/harness';

interface RawAnswer {
  status: number;
  head: string;
  body: string;
  /** Milliseconds from the first byte sent to the server closing the connection. */
  closedAfterMs: number;
}

/** Sends `head`, then `body` a byte every `intervalMs` (while the connection is open); resolves once the server closes it. */
function trickle(url: string, head: string, body: string, intervalMs: number): Promise<RawAnswer> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket: Socket = connect(Number(port), '127.0.0.1');
    const started = Date.now();
    let received = '';
    let sent = 0;
    let timer: NodeJS.Timeout | undefined;
    socket.on('connect', () => {
      socket.write(head);
      timer = setInterval(() => {
        if (sent < body.length && socket.writable) socket.write(body[sent++] ?? '');
      }, intervalMs);
    });
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearInterval(timer);
      const [headText = '', bodyText = ''] = received.split('\r\n\r\n');
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(headText)?.[1] ?? 0);
      resolve({ status, head: headText, body: bodyText, closedAfterMs: Date.now() - started });
    });
    setTimeout(() => {
      socket.destroy();
      reject(new Error(`the connection was still open after 20 s; received so far: ${received}`));
    }, 20_000).unref();
  });
}

const postHead = (path: string, length: number, apiKey?: string) =>
  `POST ${path} HTTP/1.1\r\nHost: api.example.com\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n${
    apiKey === undefined ? '' : `X-API-Key: ${apiKey}\r\n`
  }Connection: keep-alive\r\n\r\n`;

describe('connection guards', () => {
  describe('forwarding headers', () => {
    let h: Harness;
    let trusting: Harness;
    beforeAll(async () => {
      h = await startHarness();
      trusting = await startHarness({ trustedProxyHops: 1 });
    });
    afterAll(async () => {
      await h.close();
      await trusting.close();
    });

    it("sets X-Forwarded-Host and X-Forwarded-Proto itself, ignoring a client's own (the portal's same-origin check reads them)", async () => {
      await request(h.app)
        .get('/portal/tools')
        .set('Host', 'api.example.com')
        .set('X-Forwarded-Host', 'evil.example')
        .set('X-Forwarded-Proto', 'https')
        .set('Forwarded', 'host=evil.example')
        .expect(200);
      const headers = h.services.portal.received.at(-1)?.headers;
      expect(headers?.['x-forwarded-host']).toBe('api.example.com');
      expect(headers?.['x-forwarded-proto']).toBe('http');
      expect(headers?.forwarded).toBeUndefined();
    });

    it('passes them on from a trusted proxy (CLIENT_ADDRESS_HOPS above 0)', async () => {
      await request(trusting.app)
        .get('/portal/tools')
        .set('Host', 'gateway.internal')
        .set('X-Forwarded-Host', 'api.example.com')
        .set('X-Forwarded-Proto', 'https')
        .expect(200);
      const headers = trusting.services.portal.received.at(-1)?.headers;
      expect(headers?.['x-forwarded-host']).toBe('api.example.com');
      expect(headers?.['x-forwarded-proto']).toBe('https');
    });
  });

  describe('request bodies', () => {
    let h: Harness;
    let server: Awaited<ReturnType<typeof listen>>;
    beforeAll(async () => {
      h = await startHarness({ limits: { bodyTimeoutMs: 1_500 } });
      server = await listen(h.app);
    });
    afterAll(async () => {
      await server.close();
      await h.close();
    });

    it('answers a body that does not arrive in time with 400 naming body, and closes the connection', async () => {
      const answer = await trickle(server.url, postHead('/api/products/news', 100, KEYS.all), '{"symbols":["AAPL"]}'.padEnd(100, ' '), 200);
      expect(answer.status).toBe(400);
      expect(answer.head.toLowerCase()).toContain('connection: close');
      expect(ErrorBody.parse(JSON.parse(answer.body))).toEqual({
        detail: 'body: not received within 2 s',
        status_code: 400,
        type: 'validation_error',
      });
      expect(answer.closedAfterMs).toBeGreaterThanOrEqual(1_400);
      expect(answer.closedAfterMs).toBeLessThan(4_000);
      expect(h.services.news.received.length).toBe(0);
    });

    it('closes the connection after refusing a request whose body it did not read (401), without waiting for the body', async () => {
      const answer = await trickle(server.url, postHead('/api/products/news', 1_000), '{"symbols":["AAPL"]}'.padEnd(1_000, ' '), 200);
      expect(answer.status).toBe(401);
      expect(answer.head.toLowerCase()).toContain('connection: close');
      expect(answer.closedAfterMs).toBeLessThan(1_000);
    });

    it.each([
      ['a GET the gateway answers itself', 'GET /api/openapi.json', 200],
      ['a request refused before its body was read', 'POST /api/products/news', 401],
    ])(
      'reads the rest of a body it answered before (%s), so that the client reads the answer, not a reset',
      async (_name, requestLine, status) => {
        const half = 100_000;
        const { port } = new URL(server.url);
        // allowHalfOpen: the client goes on sending its body after the server's FIN, as HTTP clients do.
        const socket = connect({ port: Number(port), host: '127.0.0.1', allowHalfOpen: true });
        const outcome = await new Promise<{ received: string; error?: string }>((resolve) => {
          let received = '';
          let error: string | undefined;
          socket.on('connect', () => {
            socket.write(
              `${requestLine} HTTP/1.1\r\nHost: api.example.com\r\nContent-Type: application/json\r\nContent-Length: ${2 * half}\r\n\r\n`,
            );
            socket.write('x'.repeat(half));
          });
          socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
          // The second half goes out after the answer and the server's FIN: a server that closed at once resets it.
          socket.on('end', () => {
            setTimeout(() => {
              socket.write('x'.repeat(half / 2));
              setTimeout(() => socket.end('x'.repeat(half / 2)), 100);
            }, 50);
          });
          socket.on('error', (cause: Error) => (error = cause.message));
          socket.on('close', () => {
            resolve({ received, ...(error === undefined ? {} : { error }) });
          });
        });
        expect(outcome.error).toBeUndefined();
        const [head = '', body = ''] = outcome.received.split('\r\n\r\n');
        expect(Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1])).toBe(status);
        expect(head.toLowerCase()).toContain('connection: close');
        expect(Buffer.byteLength(body, 'latin1')).toBe(Number(/content-length: (\d+)/i.exec(head)?.[1]));
      },
    );

    it('keeps the connection of a request whose body arrived in time', async () => {
      const res = await fetch(`${server.url}/api/products/news`, {
        method: 'POST',
        headers: { 'X-API-Key': KEYS.all, 'Content-Type': 'application/json' },
        body: '{"symbols":["AAPL"]}',
      });
      await res.arrayBuffer();
      expect(res.status).toBeLessThan(500);
      expect(res.headers.get('connection')).toBe('keep-alive');
    });
  });
});
