// Event streams through the gateway, against services whose every step the test controls: events arrive one
// by one as the service sends them, quiet streams are not cut, a client that leaves stops the work upstream
// and frees its chat slot, and a service failing mid-stream ends the client's stream with an `error` event.
import http from 'node:http';
import { AnalysisStreamEvents, ChatStreamEvents, ErrorBody, formatSse } from '@fin/contracts';
import { waitFor } from '@fin/testing';
import type { Response } from 'express';
import { KEYS, UUID, deferred, listen, startHarness, type Harness, type Listening } from './support/harness';

interface SseEvent {
  event: string;
  data: unknown;
}

/** A client of an event stream that reads one event at a time. */
interface StreamClient {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** The next complete event, or 'end' when the stream ended. */
  next(): Promise<SseEvent | 'end'>;
  /** The client goes away (closes its connection). */
  leave(): void;
}

function openStream(base: string, path: string, init: { method?: string; body?: unknown; apiKey?: string } = {}): Promise<StreamClient> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${base}${path}`, {
      method: init.method ?? 'POST',
      agent: false,
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', 'x-api-key': init.apiKey ?? KEYS.all },
    });
    req.on('error', reject);
    req.on('response', (res) => {
      let buffer = '';
      const events: (SseEvent | 'end')[] = [];
      let waiting: ((event: SseEvent | 'end') => void) | undefined;
      const push = (event: SseEvent | 'end') => {
        if (waiting !== undefined) {
          const deliver = waiting;
          waiting = undefined;
          deliver(event);
        } else events.push(event);
      };
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buffer += chunk;
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const name = /^event: (.*)$/m.exec(frame)?.[1] ?? 'message';
          const data = /^data: (.*)$/m.exec(frame)?.[1] ?? '';
          push({ event: name, data: JSON.parse(data) });
        }
      });
      res.on('end', () => push('end'));
      res.on('error', () => push('end'));
      res.on('aborted', () => push('end'));
      resolve({
        status: res.statusCode ?? 0,
        headers: res.headers,
        next: () => {
          const queued = events.shift();
          return queued !== undefined ? Promise.resolve(queued) : new Promise((deliver) => (waiting = deliver));
        },
        leave: () => req.destroy(),
      });
    });
    if (init.method === 'GET') req.end();
    else req.end(JSON.stringify(init.body ?? { message: 'How is Apple doing?' }));
  });
}

/** What the chat service does on the next request; each test sets its own. */
interface Scenario {
  kind: 'complete' | 'hold' | 'crash' | 'quiet';
  sentFirst: ReturnType<typeof deferred<void>>;
  finish: ReturnType<typeof deferred<void>>;
  sentLast: boolean;
  /** Resolves when the service's response closed; true when it had finished normally. */
  closed: ReturnType<typeof deferred<boolean>>;
}

function scenario(kind: Scenario['kind']): Scenario {
  return { kind, sentFirst: deferred(), finish: deferred(), sentLast: false, closed: deferred<boolean>() };
}

let current = scenario('complete');

async function chatService(res: Response): Promise<void> {
  const step = current;
  res.on('close', () => step.closed.resolve(res.writableFinished));
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.write(formatSse('token', { type: 'token', content: 'Apple ' }));
  step.sentFirst.resolve();
  if (step.kind === 'crash') {
    // Half an event, then the process dies.
    res.write('event: token\ndata: {"type":"tok');
    setImmediate(() => res.socket?.destroy());
    return;
  }
  if (step.kind === 'hold') return; // until the client leaves
  await step.finish.promise;
  step.sentLast = true;
  res.write(formatSse('done', { type: 'done', conversation_id: UUID }));
  res.end();
}

describe('event streams', () => {
  let h: Harness;
  let gateway: Listening;
  beforeAll(async () => {
    h = await startHarness({
      // An idle limit far below how long the quiet stream stays silent: event streams must not be subject to it.
      limits: { idleTimeoutMs: 25 },
      mount: {
        chat: (app) => {
          app.post('/api/chat', (_req, res) => void chatService(res));
          app.get('/api/chat/stream', (_req, res) => void chatService(res));
        },
        analysis: (app) =>
          app.post('/api/analysis', (req, res) => {
            res.writeHead(200, { 'content-type': 'text/event-stream' });
            res.write(formatSse('synthesis_chunk', { chunk: 'Rates ' }));
            // A prompt of "Hold" keeps the stream open until it is closed from the other side.
            if (Buffer.isBuffer(req.body) && req.body.toString('utf8').includes('"Hold"')) {
              res.on('close', () => current.closed.resolve(res.writableFinished));
              return;
            }
            res.end(formatSse('done', { job_id: UUID, status: 'completed' }));
          }),
        news: (app) =>
          app.post('/api/products/news', (_req, res) => {
            res.on('close', () => current.closed.resolve(res.writableFinished));
            current.sentFirst.resolve();
          }),
      },
    });
    gateway = await listen(h.app);
  });
  afterAll(async () => {
    await gateway.close();
    await h.close();
  });

  it('delivers each event as the service sends it, unbuffered and uncompressed', async () => {
    current = scenario('complete');
    const client = await openStream(gateway.url, '/api/chat');
    expect(client.status).toBe(200);
    expect(client.headers['content-type']).toMatch(/^text\/event-stream/);
    expect(client.headers['x-accel-buffering']).toBe('no');
    expect(client.headers['cache-control']).toBe('no-cache');
    expect(client.headers['content-encoding']).toBeUndefined();
    expect(client.headers['content-length']).toBeUndefined();

    const first = await client.next();
    // The first event is here while the service has not yet sent the last one.
    expect(current.sentLast).toBe(false);
    expect(first).toEqual({ event: 'token', data: ChatStreamEvents.token.parse({ type: 'token', content: 'Apple ' }) });

    current.finish.resolve();
    const last = await client.next();
    expect(last).toEqual({ event: 'done', data: { type: 'done', conversation_id: UUID } });
    expect(ChatStreamEvents.done.parse((last as SseEvent).data)).toBeTruthy();
    expect(await client.next()).toBe('end');
  });

  it('holds a chat slot while the stream lives and gives it back when it ends', async () => {
    current = scenario('complete');
    const slots = h.rateLimits.slotEvents.length;
    const client = await openStream(gateway.url, `/api/chat/stream?conversation_id=${UUID}`, { method: 'GET' });
    expect(client.status).toBe(200);
    await client.next();
    expect(h.rateLimits.heldBy()).toBe(1);
    current.finish.resolve();
    await client.next();
    expect(await client.next()).toBe('end');
    await waitFor(() => h.rateLimits.heldBy() === 0, { what: 'the chat slot to be released' });
    expect(h.rateLimits.slotEvents.slice(slots)).toEqual(['acquire', 'release']);
  });

  it('stops the work upstream and frees the chat slot when the client leaves mid-stream', async () => {
    current = scenario('hold');
    const client = await openStream(gateway.url, '/api/chat');
    await client.next();
    expect(h.rateLimits.heldBy()).toBe(1);

    const slots = h.rateLimits.slotEvents.length;
    client.leave();
    // The service's response is closed without having finished: the gateway aborted its request.
    expect(await current.closed.promise).toBe(false);
    await waitFor(() => h.rateLimits.heldBy() === 0, { what: 'the chat slot to be released' });
    // The chat service runs a reply on for a while after its client left: the slot is given back as detached, so
    // that it stays taken for that while.
    expect(h.rateLimits.slotEvents.slice(slots)).toEqual(['release detached']);
  });

  it("ends an open chat stream with an error event when its key is revoked, and closes the service's side", async () => {
    current = scenario('hold');
    const client = await openStream(gateway.url, '/api/chat');
    expect(await client.next()).toEqual({ event: 'token', data: { type: 'token', content: 'Apple ' } });
    expect(h.auth.watching()).toBe(1);
    const slots = h.rateLimits.slotEvents.length;

    h.auth.revoke();
    const last = await client.next();
    expect(last).toEqual({
      event: 'error',
      data: { detail: 'Invalid API key: it was revoked while this stream was open.', status_code: 401, type: 'unauthorized' },
    });
    expect(ChatStreamEvents.error.parse((last as SseEvent).data)).toBeTruthy();
    expect(await client.next()).toBe('end');
    expect(await current.closed.promise).toBe(false);
    // The reply behind it may run on for the detach grace: its slot is given back as detached.
    await waitFor(() => h.rateLimits.heldBy() === 0, { what: 'the chat slot to be released' });
    expect(h.rateLimits.slotEvents.slice(slots)).toEqual(['release detached']);
    expect(h.auth.watching()).toBe(0);
  });

  it('ends an open analysis stream the same way when its key is revoked', async () => {
    current = scenario('hold');
    const client = await openStream(gateway.url, '/api/analysis', {
      body: { prompt: 'Hold', output_format: { type: 'markdown', stream: true } },
    });
    expect(await client.next()).toEqual({ event: 'synthesis_chunk', data: { chunk: 'Rates ' } });
    h.auth.revoke();
    expect(await client.next()).toEqual({ event: 'error', data: expect.objectContaining({ status_code: 401, type: 'unauthorized' }) });
    expect(await client.next()).toBe('end');
    expect(await current.closed.promise).toBe(false);
  });

  it('watches only while the stream is open: a stream that ended is not cut later', async () => {
    current = scenario('complete');
    const client = await openStream(gateway.url, '/api/chat');
    await client.next();
    current.finish.resolve();
    expect(await client.next()).toEqual({ event: 'done', data: { type: 'done', conversation_id: UUID } });
    expect(await client.next()).toBe('end');
    await waitFor(() => h.auth.watching() === 0, { what: 'the ended stream to stop being watched' });
  });

  it("refuses a chat request beyond the key's concurrent streams with 429", async () => {
    current = scenario('hold');
    h.rateLimits.chatSlotsPerKey = 1;
    try {
      const first = await openStream(gateway.url, '/api/chat');
      await first.next();
      const second = await fetch(`${gateway.url}/api/chat`, {
        method: 'POST',
        headers: { 'x-api-key': KEYS.all, 'content-type': 'application/json' },
        body: '{}',
      });
      expect(second.status).toBe(429);
      expect(ErrorBody.parse(await second.json())).toEqual({
        detail: 'Already 1 chat requests in flight for this API key.',
        status_code: 429,
        type: 'rate_limit_exceeded',
      });
      first.leave();
      await waitFor(() => h.rateLimits.heldBy() === 0, { what: 'the chat slot to be released' });
    } finally {
      h.rateLimits.chatSlotsPerKey = 10;
    }
  });

  it("ends the client's stream with an error event when the service fails mid-stream, never with half an event", async () => {
    current = scenario('crash');
    const client = await openStream(gateway.url, '/api/chat');
    expect(await client.next()).toEqual({ event: 'token', data: { type: 'token', content: 'Apple ' } });
    const failure = await client.next();
    expect(failure).toEqual({
      event: 'error',
      data: { detail: 'The chat service failed while streaming the response.', status_code: 502, type: 'bad_gateway' },
    });
    expect(ChatStreamEvents.error.parse((failure as SseEvent).data)).toBeTruthy();
    expect(await client.next()).toBe('end');
    await waitFor(() => h.rateLimits.heldBy() === 0, { what: 'the chat slot to be released' });
    // The service's side failed, not necessarily the reply (a lost connection): the slot is held as detached.
    expect(h.rateLimits.slotEvents.at(-1)).toBe('release detached');
  });

  it('does not cut a stream that stays quiet longer than the idle limit of other responses', async () => {
    current = scenario('quiet');
    const client = await openStream(gateway.url, '/api/chat');
    await client.next();
    // Ten times the 25 ms idle limit without a byte.
    await new Promise((resolve) => setTimeout(resolve, 250));
    current.finish.resolve();
    expect(await client.next()).toEqual({ event: 'done', data: { type: 'done', conversation_id: UUID } });
    expect(await client.next()).toBe('end');
  });

  it('passes the analysis stream through the same way', async () => {
    const client = await openStream(gateway.url, '/api/analysis', {
      body: { prompt: 'Rates?', output_format: { type: 'markdown', stream: true } },
    });
    const chunk = await client.next();
    const done = await client.next();
    expect(chunk).toEqual({ event: 'synthesis_chunk', data: AnalysisStreamEvents.synthesis_chunk.parse({ chunk: 'Rates ' }) });
    expect(done).toEqual({ event: 'done', data: AnalysisStreamEvents.done.parse({ job_id: UUID, status: 'completed' }) });
    expect(await client.next()).toBe('end');
  });

  it('aborts the upstream request when the client leaves before the service answered', async () => {
    current = scenario('hold');
    const req = http.request(`${gateway.url}/api/products/news`, {
      method: 'POST',
      agent: false,
      headers: { 'x-api-key': KEYS.all, 'content-type': 'application/json' },
    });
    req.on('error', () => {});
    req.end('{"symbols":["AAPL"]}');
    await current.sentFirst.promise;
    req.destroy();
    expect(await current.closed.promise).toBe(false);
  });
});
