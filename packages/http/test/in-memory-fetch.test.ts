// inMemoryFetch against a service app of its own: what a network request would get (status, headers, bodies both
// ways with back-pressure, the error translator, the access log), and a client disconnect when the fetch aborts.
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ErrorBody } from '@fin/contracts';
import { waitFor } from '@fin/testing';
import type express from 'express';
import { badRequest, createServiceApp, inMemoryFetch } from '../src';
import { captureLogger } from './helpers';

const ORIGIN = 'http://127.0.0.1:8080';

/** A promise and its resolve, for a handler that waits for the test. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open = () => {};
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

function appWith(routes: (app: express.Express) => void, jsonBodyLimit: number | false = 512 * 1024) {
  const { logger, lines } = captureLogger();
  const app = createServiceApp({ name: 'test', logger, readiness: async () => {}, jsonBodyLimit, routes });
  return { fetch: inMemoryFetch(app, { origin: ORIGIN }), lines };
}

/** What a handler saw of its request and response once the response closed. */
interface Seen {
  finished: boolean;
  aborted: boolean;
  requestDestroyed: boolean;
}

function watch(req: IncomingMessage, res: ServerResponse): Promise<Seen> {
  let aborted = false;
  req.once('aborted', () => (aborted = true));
  req.on('error', () => undefined);
  return new Promise((resolve) =>
    res.once('close', () => resolve({ finished: res.writableFinished, aborted, requestDestroyed: req.destroyed })),
  );
}

const decoder = new TextDecoder();

/** A response's body, its chunks typed as the bytes they are. */
const bodyOf = (response: Response) => response.body as ReadableStream<Uint8Array>;

describe('inMemoryFetch', () => {
  it('answers with the status, the headers (each Set-Cookie apart) and the JSON body, as the app saw a loopback request', async () => {
    const { fetch, lines } = appWith((app) =>
      app.get('/things/:id', (req, res) => {
        res.append('Set-Cookie', 'a=1; Path=/');
        res.append('Set-Cookie', 'b=2; Path=/; HttpOnly');
        res.status(201).json({
          id: req.params.id,
          query: req.query.q,
          host: req.headers.host,
          peer: req.socket.remoteAddress,
          protocol: req.protocol,
          key: req.header('x-api-key'),
        });
      }),
    );
    const response = await fetch(`${ORIGIN}/things/42?q=x`, { headers: { 'X-API-Key': 'k', 'X-Request-Id': 'outer.mcp.1' } });
    expect(response.status).toBe(201);
    expect(response.statusText).toBe('Created');
    expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(response.headers.get('x-request-id')).toBe('outer.mcp.1');
    expect(response.headers.getSetCookie()).toEqual(['a=1; Path=/', 'b=2; Path=/; HttpOnly']);
    expect(response.headers.has('connection')).toBe(false);
    expect(await response.json()).toEqual({ id: '42', query: 'x', host: '127.0.0.1:8080', peer: '127.0.0.1', protocol: 'http', key: 'k' });
    // The app's own access log and request id, as for a request over a socket.
    await waitFor(() => lines.some((line) => line.msg === 'request completed' && line.requestId === 'outer.mcp.1'));
  });

  it("gives an error a handler throws as the app's error translator writes it", async () => {
    const { fetch } = appWith((app) => {
      app.get('/bad', () => {
        throw badRequest('symbols: must hold 1 to 10 symbols');
      });
      app.get('/broken', () => {
        throw new Error('connection string postgres://secret@db');
      });
    });
    const bad = await fetch(`${ORIGIN}/bad`);
    expect(bad.status).toBe(400);
    expect(ErrorBody.parse(await bad.json())).toEqual({
      detail: 'symbols: must hold 1 to 10 symbols',
      status_code: 400,
      type: 'validation_error',
    });
    const broken = await fetch(`${ORIGIN}/broken`);
    expect(broken.status).toBe(500);
    const body = ErrorBody.parse(await broken.json());
    expect(body).toMatchObject({ status_code: 500, type: 'internal_error' });
    expect(body.detail).not.toContain('secret');
    const missing = await fetch(`${ORIGIN}/nowhere`, { method: 'POST', body: '{}', headers: { 'Content-Type': 'application/json' } });
    expect(missing.status).toBe(404);
    expect(ErrorBody.parse(await missing.json()).type).toBe('not_found');
  });

  it('streams an event-stream body as it is written', async () => {
    const second = gate();
    let secondWritten = false;
    const { fetch } = appWith((app) =>
      app.get('/events', async (_req, res) => {
        res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
        res.write('event: one\ndata: {}\n\n');
        await second.opened;
        secondWritten = true;
        res.end('event: two\ndata: {}\n\n');
      }),
    );
    const response = await fetch(`${ORIGIN}/events`, { headers: { Accept: 'text/event-stream' } });
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    expect(response.headers.has('transfer-encoding')).toBe(false);
    const reader = bodyOf(response).getReader();
    const first = await reader.read();
    expect(decoder.decode(first.value)).toBe('event: one\ndata: {}\n\n');
    expect(secondWritten).toBe(false);
    second.open();
    let rest = '';
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) rest += decoder.decode(chunk.value);
    expect(rest).toBe('event: two\ndata: {}\n\n');
  });

  it('sends a 256 KiB body, given whole (JSON) or as a stream read only as fast as the app reads it', async () => {
    const json = appWith((app) =>
      app.post('/json', (req, res) => {
        const body = req.body as { text: string };
        res.json({ length: body.text.length, contentLength: req.headers['content-length'] });
      }),
    );
    const reading = gate();
    // Bodies read by the handler itself, as the gateway reads them.
    const raw = appWith(
      (app) =>
        app.post('/raw', async (req, res) => {
          await reading.opened;
          const hash = createHash('sha256');
          let bytes = 0;
          for await (const chunk of req) {
            hash.update(chunk as Buffer);
            bytes += (chunk as Buffer).length;
          }
          res.json({ bytes, sha256: hash.digest('hex'), framing: req.headers['transfer-encoding'] });
        }),
      false,
    );

    const text = 'x'.repeat(256 * 1024);
    const whole = await json.fetch(`${ORIGIN}/json`, {
      method: 'POST',
      body: JSON.stringify({ text }),
      headers: { 'Content-Type': 'application/json' },
    });
    expect(await whole.json()).toEqual({ length: text.length, contentLength: String(JSON.stringify({ text }).length) });

    const chunk = new Uint8Array(4096).map((_, i) => i % 251);
    const chunks = 64;
    let pulled = 0;
    const source = new ReadableStream<Uint8Array>(
      {
        pull: (controller) => {
          if (pulled === chunks) controller.close();
          else {
            pulled++;
            controller.enqueue(chunk.slice());
          }
        },
      },
      { highWaterMark: 0 },
    );
    const answer = raw.fetch(`${ORIGIN}/raw`, { method: 'POST', body: source, duplex: 'half' });
    // While the handler does not read, only what fills the request's buffer (64 KiB) is taken from the source.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(pulled).toBeGreaterThan(0);
    expect(pulled * chunk.length).toBeLessThanOrEqual(80 * 1024);
    reading.open();
    const sent = createHash('sha256');
    for (let i = 0; i < chunks; i++) sent.update(chunk);
    expect(await (await answer).json()).toEqual({ bytes: chunks * 4096, sha256: sent.digest('hex'), framing: 'chunked' });
  });

  it("holds the app's writes back while the body is not read (write returns false, then 'drain')", async () => {
    let written = 0;
    let refused = 0;
    const total = 1024 * 1024;
    const { fetch } = appWith((app) =>
      app.get('/big', async (_req, res) => {
        res.setHeader('Content-Type', 'application/octet-stream');
        const block = Buffer.alloc(16 * 1024, 7);
        while (written < total) {
          written += block.length;
          if (!res.write(block)) {
            refused++;
            await new Promise((resolve) => res.once('drain', resolve));
          }
        }
        res.end();
      }),
    );
    const response = await fetch(`${ORIGIN}/big`);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(written).toBeLessThanOrEqual(256 * 1024);
    expect(refused).toBe(1);
    let read = 0;
    for await (const chunk of bodyOf(response)) read += chunk.byteLength;
    expect(read).toBe(total);
    expect(refused).toBeGreaterThan(1);
  });

  it('closes the request as a client disconnect when the fetch aborts mid-stream, and when the reader cancels', async () => {
    const seen: Promise<Seen>[] = [];
    const { fetch, lines } = appWith((app) =>
      app.get('/forever', (req, res) => {
        seen.push(watch(req, res));
        res.writeHead(200, { 'Content-Type': 'text/event-stream' });
        res.write(': open\n\n');
        const timer = setInterval(() => res.write(': keep-alive\n\n'), 20);
        res.once('close', () => clearInterval(timer));
      }),
    );
    const controller = new AbortController();
    const response = await fetch(`${ORIGIN}/forever`, { signal: controller.signal, headers: { 'X-Request-Id': 'aborted-stream' } });
    const reader = bodyOf(response).getReader();
    expect(decoder.decode((await reader.read()).value)).toBe(': open\n\n');
    controller.abort();
    await expect(reader.read()).rejects.toMatchObject({ name: 'AbortError' });
    await expect(seen[0]).resolves.toEqual({ finished: false, aborted: true, requestDestroyed: true });
    await waitFor(() => lines.some((line) => line.requestId === 'aborted-stream' && line.aborted === true));

    const cancelled = await fetch(`${ORIGIN}/forever`);
    await bodyOf(cancelled).cancel();
    await expect(seen[1]).resolves.toEqual({ finished: false, aborted: true, requestDestroyed: true });
  });

  it('rejects with the abort reason when the fetch aborts before the head, and the app sees the client leave', async () => {
    let seen: Promise<Seen> | undefined;
    const { fetch } = appWith((app) =>
      app.get('/slow', (req, res) => {
        seen = watch(req, res);
      }),
    );
    const controller = new AbortController();
    const answer = fetch(`${ORIGIN}/slow`, { signal: controller.signal });
    await waitFor(() => seen !== undefined);
    controller.abort();
    await expect(answer).rejects.toMatchObject({ name: 'AbortError' });
    await expect(seen).resolves.toMatchObject({ finished: false, requestDestroyed: true });
    await expect(fetch(`${ORIGIN}/slow`, { signal: AbortSignal.abort() })).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('fails as a broken connection does when the app destroys its response, and refuses another origin', async () => {
    const { fetch } = appWith((app) => {
      app.get('/cut-before', (_req, res) => {
        res.destroy();
      });
      app.get('/cut-after', (_req, res) => {
        res.writeHead(200, { 'Content-Type': 'text/plain' });
        res.write('partial');
        setTimeout(() => res.destroy(new Error('upstream went away')), 10);
      });
    });
    await expect(fetch(`${ORIGIN}/cut-before`)).rejects.toMatchObject({ name: 'TypeError', message: 'fetch failed' });
    const cut = await fetch(`${ORIGIN}/cut-after`);
    await expect(cut.text()).rejects.toMatchObject({ name: 'TypeError', message: 'terminated' });
    await expect(fetch('http://127.0.0.1:9999/cut-before')).rejects.toThrow(TypeError);
  });
});
