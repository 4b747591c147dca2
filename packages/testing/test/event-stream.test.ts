import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { openEventStream } from '../src';

describe('openEventStream', () => {
  let server: http.Server;
  let url: string;
  /** What the server saw of the last request, and a way to let it finish. */
  let last: { method?: string; headers?: http.IncomingHttpHeaders; body: string; closed: Promise<void> };

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      const closed = new Promise<void>((resolve) => res.once('close', () => resolve()));
      req.on('end', () => {
        last = { method: req.method, headers: req.headers, body, closed };
        if (req.url === '/error') {
          res.writeHead(404, { 'content-type': 'application/json' }).end('{"detail":"No.","status_code":404,"type":"not_found"}');
          return;
        }
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        // Split mid-frame on purpose: the client must put frames together across chunks.
        res.write('retry: 1500\n\n: keep-alive\n\nid: a:1\nevent: token\ndata: {"type":"tok');
        res.write('en","content":"Hi"}\n\ndata: line 1\ndata: line 2\n\n');
        if (req.url === '/open') return;
        res.end('id: a:2\r\nevent: done\r\ndata: {"type":"done"}\r\n\r\n');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('reads frames with their ids, names and JSON data, comments and retry, in order', async () => {
    const client = await openEventStream(`${url}/stream`, { body: { message: 'hi' }, headers: { 'last-event-id': 'a:0' } });
    expect(client.status).toBe(200);
    expect(await client.rest()).toEqual([
      { id: 'a:1', event: 'token', data: { type: 'token', content: 'Hi' } },
      { event: 'message', data: 'line 1\nline 2' },
      { id: 'a:2', event: 'done', data: { type: 'done' } },
    ]);
    expect(client.comments).toEqual(['keep-alive']);
    expect(client.retryMs).toBe(1500);
    expect(last).toMatchObject({
      method: 'POST',
      body: '{"message":"hi"}',
      headers: { 'last-event-id': 'a:0', 'content-type': 'application/json' },
    });
  });

  it('leaves mid-stream by closing its connection, which ends the stream', async () => {
    const client = await openEventStream(`${url}/open`);
    expect((await client.next())?.event).toBe('token');
    expect((await client.next())?.event).toBe('message');
    client.close();
    await last.closed;
    expect(await client.next()).toBeUndefined();
  });

  it('gives the body of an answer that is not an event stream', async () => {
    const client = await openEventStream(`${url}/error`);
    expect(client.status).toBe(404);
    expect(await client.body()).toEqual({ detail: 'No.', status_code: 404, type: 'not_found' });
  });
});
