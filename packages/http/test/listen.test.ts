import { once } from 'node:events';
import { connect, createServer, type AddressInfo } from 'node:net';
import { ErrorBody } from '@fin/contracts';
import { createServiceApp, listen, listenOrClose, type Closer } from '../src';
import { captureLogger } from './helpers';

/** Sends a GET with `target` exactly as written and reads until the server closes the connection. */
function get(port: number, target: string): Promise<{ status: number; contentType: string | undefined; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
    socket.on('end', () => {
      const [head = '', body = ''] = received.split('\r\n\r\n');
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]), contentType: /\r\ncontent-type: ([^\r]+)/i.exec(head)?.[1], body });
    });
    socket.on('error', reject);
    socket.write(`GET ${target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`, 'latin1');
  });
}

describe('listen', () => {
  it('answers a target express cannot read a path from with the spec 404 body, and passes every other one to the app', async () => {
    const { logger } = captureLogger();
    const app = createServiceApp({
      name: 'test',
      logger,
      readiness: () => Promise.resolve(),
      routes: (router) => void router.get('/docs', (_req, res) => void res.json({ docs: true })),
    });
    const server = await listen(app, 0, '127.0.0.1');
    const { port } = server.address() as AddressInfo;
    try {
      // Node's legacy parser reads these as a host and no path: express would skip every middleware and send HTML.
      for (const target of ['//docs?a[b]={"@":false,"#":0}&a=null', '//a?@#']) {
        const answer = await get(port, target);
        expect(answer).toMatchObject({ status: 404, contentType: 'application/json; charset=utf-8' });
        expect(ErrorBody.parse(JSON.parse(answer.body))).toMatchObject({ status_code: 404, type: 'not_found' });
      }
      // A double slash with a path is the app's: its own 404 (request id and all), and the route still answers.
      const doubled = await get(port, '//docs?a=1');
      expect(doubled.status).toBe(404);
      expect(JSON.parse(doubled.body)).toEqual({ detail: 'No route for GET //docs.', status_code: 404, type: 'not_found' });
      expect(await get(port, '/docs?a={"@":0,"#":1}')).toMatchObject({ status: 200, body: '{"docs":true}' });
    } finally {
      server.close();
    }
  });
});

describe('listenOrClose', () => {
  const { logger } = captureLogger();
  const app = createServiceApp({ name: 'test', logger, readiness: () => Promise.resolve(), routes: () => undefined });
  const recording = (closed: string[], ...names: string[]): Closer[] =>
    names.map((name) => ({ name, close: async () => void closed.push(name) }));

  it('listens after what runs before it, and reports where', async () => {
    const steps: string[] = [];
    const { server, url } = await listenOrClose(app, {
      port: 0,
      host: '127.0.0.1',
      logger,
      started: recording(steps, 'worker'),
      before: async () => void steps.push('before'),
    });
    try {
      expect(url).toBe(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
      expect(steps).toEqual(['before']);
    } finally {
      server.close();
    }
  });

  it('closes what was started, in order, when the port is taken, and rejects naming PORT with the code kept', async () => {
    const taken = createServer().listen(0, '127.0.0.1');
    await once(taken, 'listening');
    const { port } = taken.address() as AddressInfo;
    const closed: string[] = [];
    try {
      await expect(
        listenOrClose(app, { port, host: '127.0.0.1', logger, started: recording(closed, 'worker', 'relay', 'pool') }),
      ).rejects.toMatchObject({
        message: `PORT ${port} is in use on 127.0.0.1; set PORT to a free port (0 picks one).`,
        code: 'EADDRINUSE',
      });
      expect(closed).toEqual(['worker', 'relay', 'pool']);
    } finally {
      taken.close();
    }
  });

  it('closes what was started when the step before listening fails, and with no app (a worker-only process) only runs that step', async () => {
    const closed: string[] = [];
    const failure = new Error('subscribe failed');
    await expect(
      listenOrClose(app, {
        port: 0,
        host: '127.0.0.1',
        logger,
        started: recording(closed, 'worker', 'pool'),
        before: () => Promise.reject(failure),
      }),
    ).rejects.toBe(failure);
    expect(closed).toEqual(['worker', 'pool']);
    expect(await listenOrClose(undefined, { port: 0, host: '127.0.0.1', logger, started: [], before: () => Promise.resolve() })).toEqual(
      {},
    );
  });
});
