import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { createHttpFetch, type HttpFetch } from '../src/transport';

interface Server {
  url: string;
  /** Connections opened so far. */
  connections(): number;
  /** Resolves when the server sees the next request's connection close. */
  nextClose(): Promise<void>;
  close(): Promise<void>;
}

async function serve(handler: http.RequestListener): Promise<Server> {
  let opened = 0;
  let waiting: (() => void) | undefined;
  const server = http.createServer(handler);
  server.keepAliveTimeout = 5_000;
  server.on('connection', (socket) => {
    opened += 1;
    socket.on('close', () => {
      waiting?.();
      waiting = undefined;
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    connections: () => opened,
    nextClose: () => new Promise<void>((resolve) => (waiting = resolve)),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function text(stream: ReadableStream<Uint8Array> | null): Promise<string> {
  if (stream === null) return '';
  const decoder = new TextDecoder();
  let out = '';
  for await (const chunk of stream) out += decoder.decode(chunk, { stream: true });
  return out + decoder.decode();
}

describe('the SDK transport on node:http', () => {
  let transport: HttpFetch;
  let server: Server | undefined;

  beforeEach(() => {
    transport = createHttpFetch();
  });

  afterEach(async () => {
    transport.close();
    await server?.close();
    server = undefined;
  });

  it('sends the method, headers and body, returns status, headers and body, and reuses the connection', async () => {
    server = await serve((req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (chunk: string) => (body += chunk));
      req.on('end', () => {
        res.writeHead(201, { 'content-type': 'application/json', 'request-id': 'req_1' });
        res.end(
          JSON.stringify({
            method: req.method,
            type: req.headers['content-type'],
            length: req.headers['content-length'],
            key: req.headers['x-api-key'],
            body,
          }),
        );
      });
    });
    for (let n = 0; n < 3; n++) {
      const response = await transport.fetch(`${server.url}/v1/messages`, {
        method: 'POST',
        headers: new Headers({ 'content-type': 'application/json', 'x-api-key': 'k' }),
        body: '{"ü":1}',
      });
      expect(response.status).toBe(201);
      expect(response.ok).toBe(true);
      expect(response.headers.get('request-id')).toBe('req_1');
      expect(await response.json()).toEqual({
        method: 'POST',
        type: 'application/json',
        length: String(Buffer.byteLength('{"ü":1}')),
        key: 'k',
        body: '{"ü":1}',
      });
    }
    expect(server.connections()).toBe(1);
  });

  it('streams the body as it arrives', async () => {
    let release: (() => void) | undefined;
    server = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('event: one\n\n');
      release = () => res.end('event: two\n\n');
    });
    const response = await transport.fetch(server.url);
    const reader: ReadableStreamDefaultReader<Uint8Array> = response.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('event: one\n\n');
    release!();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('event: two\n\n');
    expect((await reader.read()).done).toBe(true);
  });

  it('rejects with the abort reason when aborted before the answer, and closes the connection', async () => {
    server = await serve(() => undefined);
    const controller = new AbortController();
    const pending = transport.fetch(server.url, { signal: controller.signal });
    const closed = server.nextClose();
    await new Promise((resolve) => setTimeout(resolve, 50));
    controller.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
    await closed;
  });

  it('rejects at once when the signal has already fired', async () => {
    server = await serve((_req, res) => res.end('never asked'));
    await expect(transport.fetch(server.url, { signal: AbortSignal.abort() })).rejects.toMatchObject({ name: 'AbortError' });
    expect(server.connections()).toBe(0);
  });

  it('errors the body with the abort reason when aborted mid-stream, and closes the connection', async () => {
    server = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('event: first\n\n');
    });
    const controller = new AbortController();
    const response = await transport.fetch(server.url, { signal: controller.signal });
    const reader = response.body!.getReader();
    await reader.read();
    const closed = server.nextClose();
    controller.abort();
    await expect(reader.read()).rejects.toMatchObject({ name: 'AbortError' });
    await closed;
  });

  it('closes the connection when the reader cancels the body', async () => {
    server = await serve((_req, res) => {
      res.writeHead(200);
      res.write('partial');
    });
    const response = await transport.fetch(server.url);
    const closed = server.nextClose();
    await response.body!.cancel();
    await closed;
  });

  it('errors the body when the server drops the connection mid-response', async () => {
    server = await serve((req, res) => {
      res.writeHead(200, { 'content-length': '100' });
      res.write('only part of it');
      setTimeout(() => req.socket.destroy(), 20);
    });
    const response = await transport.fetch(server.url);
    await expect(text(response.body)).rejects.toThrow(/terminated|aborted/);
  });

  it('rejects a connection failure with a TypeError whose cause is the socket error, as fetch does', async () => {
    server = await serve(() => undefined);
    const { url } = server;
    await server.close();
    server = undefined;
    const failure = await transport.fetch(url).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(TypeError);
    expect((failure as { cause?: { code?: string } }).cause?.code).toBe('ECONNREFUSED');
  });

  it('decodes a gzip-encoded body and gives no body for 204', async () => {
    server = await serve((req, res) => {
      if (req.url === '/empty') {
        res.writeHead(204);
        res.end();
        return;
      }
      res.writeHead(200, { 'content-encoding': 'gzip' });
      res.end(gzipSync('{"zipped":true}'));
    });
    expect(await (await transport.fetch(server.url)).json()).toEqual({ zipped: true });
    const empty = await transport.fetch(`${server.url}/empty`);
    expect(empty.status).toBe(204);
    expect(empty.body).toBeNull();
  });

  it('sends Host and the given headers, and the same head again on a reused connection', async () => {
    const seen: http.IncomingHttpHeaders[] = [];
    server = await serve((req, res) => {
      seen.push(req.headers);
      res.end('ok');
    });
    for (let n = 0; n < 2; n++) {
      const response = await transport.fetch(`${server.url}/v1/messages?beta=true`, {
        method: 'POST',
        headers: { 'x-api-key': 'k', 'anthropic-version': '2023-06-01' },
        body: '{}',
      });
      expect(await response.text()).toBe('ok');
    }
    expect(server.connections()).toBe(1);
    for (const headers of seen) {
      expect(headers).toMatchObject({
        host: new URL(server.url).host,
        'x-api-key': 'k',
        'anthropic-version': '2023-06-01',
        'content-length': '2',
        connection: 'keep-alive',
      });
    }
  });

  it('gives a Response whose body is read as the SDK reads it: an async iterable of Uint8Array chunks', async () => {
    server = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('event: one\n\n');
      setTimeout(() => res.end('event: two\n\n'), 20);
    });
    const response = await transport.fetch(server.url);
    expect(response).toBeInstanceOf(Response);
    expect(response.bodyUsed).toBe(false);
    const chunks: string[] = [];
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      expect(chunk).toBeInstanceOf(Uint8Array);
      chunks.push(new TextDecoder().decode(chunk));
    }
    expect(chunks.join('')).toBe('event: one\n\nevent: two\n\n');
    expect(response.bodyUsed).toBe(true);
    await expect(response.text()).rejects.toThrow(TypeError);
  });

  it('closes the connection when the reader stops iterating before the end', async () => {
    server = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('event: first\n\n');
    });
    const response = await transport.fetch(server.url);
    const closed = server.nextClose();
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      expect(new TextDecoder().decode(chunk)).toBe('event: first\n\n');
      break;
    }
    await closed;
  });

  it('reads an error answer whole with text(), as the SDK does for a failed call', async () => {
    server = await serve((_req, res) => {
      res.writeHead(529, { 'content-type': 'application/json', 'retry-after': '3' });
      res.end('{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}');
    });
    const response = await transport.fetch(server.url, { method: 'POST', body: '{}' });
    expect(response.ok).toBe(false);
    expect(response.headers.get('retry-after')).toBe('3');
    expect(JSON.parse(await response.text())).toEqual({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } });
  });

  it('hands a streamed request body to the platform fetch', async () => {
    server = await serve((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      req.on('end', () => res.end(body));
    });
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('streamed'));
        controller.close();
      },
    });
    const response = await transport.fetch(server.url, { method: 'POST', body, duplex: 'half' });
    expect(await response.text()).toBe('streamed');
  });
});
