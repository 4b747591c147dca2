import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { ErrorBody } from '@fin/contracts';
import { createServiceApp, listen } from '../src';
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
