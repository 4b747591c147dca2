// The client against a local HTTP server that answers as the API would (statuses, rate-limit headers, SSE
// frames): retries, typed errors, following a job and the streams, checked at the wire.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createOpenApiDocument } from '@fin/contracts';
import {
  APIConnectionError,
  APITimeoutError,
  ConflictError,
  FinancialIntelligence,
  InternalServerError,
  JobFailedError,
  NotFoundError,
  OPERATION_METHODS,
  RateLimitError,
  RedirectRefusedError,
  ValidationError,
} from '../src';

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
  at: number;
}

let server: Server;
let baseUrl: string;
let handlers: Handler[];
let seen: Seen[];

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body, at: Date.now() });
      const handler = handlers.shift();
      if (handler === undefined) json(res, 500, { detail: 'no handler', status_code: 500, type: 'internal_error' });
      else handler(req, res, body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

beforeEach(() => {
  handlers = [];
  seen = [];
});

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  res.writeHead(status, { 'content-type': 'application/json', 'x-request-id': `req-${seen.length}`, ...headers });
  res.end(JSON.stringify(body));
}

const error = (status: number, type: string, detail: string) => ({ detail, status_code: status, type });

function client(options: Partial<ConstructorParameters<typeof FinancialIntelligence>[0]> = {}) {
  return new FinancialIntelligence({ apiKey: 'fin_test', baseUrl, maxRetries: 2, ...options });
}

const JOB = '3fa85f64-5717-4562-b3fc-2c963f66afa6';
const pending = { job_id: JOB, status: 'pending', status_url: `/api/jobs/news/${JOB}/status`, result_url: `/api/jobs/news/${JOB}/result` };

function sse(res: ServerResponse, frames: string[], end = true, headers: Record<string, string> = {}) {
  res.writeHead(200, { 'content-type': 'text/event-stream', ...headers });
  for (const frame of frames) res.write(frame);
  if (end) res.end();
}

describe('retries', () => {
  it('retries a 429 once the window of X-RateLimit-Reset has ended, with the same Idempotency-Key', async () => {
    const reset = Math.ceil(Date.now() / 1000) + 1;
    handlers.push(
      (_req, res) =>
        json(res, 429, error(429, 'rate_limit_exceeded', 'Rate limit exceeded.'), {
          'x-ratelimit-limit': '1',
          'x-ratelimit-remaining': '0',
          'x-ratelimit-reset': String(reset),
          'retry-after': '1',
        }),
      (_req, res) => json(res, 202, pending),
    );
    const answer = await client().news.create({ symbols: ['AAPL'] });
    expect(answer).toEqual(pending);
    expect(seen).toHaveLength(2);
    expect(seen[1]!.at).toBeGreaterThanOrEqual(reset * 1000);
    expect(seen[0]!.headers['x-api-key']).toBe('fin_test');
    expect(seen[0]!.headers['idempotency-key']).toMatch(/^[0-9a-f-]{36}$/);
    expect(seen[1]!.headers['idempotency-key']).toBe(seen[0]!.headers['idempotency-key']);
    expect(JSON.parse(seen[1]!.body)).toEqual({ symbols: ['AAPL'] });
  });

  it('throws RateLimitError with the body, request id and rate-limit headers once the retries are used up', async () => {
    const reset = Math.ceil(Date.now() / 1000);
    for (let i = 0; i < 2; i++)
      handlers.push((_req, res) =>
        json(res, 429, error(429, 'rate_limit_exceeded', 'Rate limit exceeded: 20 per minute.'), {
          'x-ratelimit-limit': '20',
          'x-ratelimit-remaining': '0',
          'x-ratelimit-reset': String(reset),
          'retry-after': '1',
        }),
      );
    const thrown = await client({ maxRetries: 1 })
      .stockReport.create({ symbols: ['MSFT'] })
      .result()
      .catch((e: unknown) => e);
    expect(thrown).toBeInstanceOf(RateLimitError);
    const rateLimited = thrown as RateLimitError;
    expect(rateLimited.status).toBe(429);
    expect(rateLimited.body).toEqual(error(429, 'rate_limit_exceeded', 'Rate limit exceeded: 20 per minute.'));
    expect(rateLimited.requestId).toBe('req-2');
    expect(rateLimited.rateLimit).toEqual({ limit: 20, remaining: 0, reset: new Date(reset * 1000), retryAfterSeconds: 1 });
    expect(seen).toHaveLength(2);
  });

  it('does not wait longer than maxRetryDelayMs for a window to end', async () => {
    handlers.push((_req, res) =>
      json(res, 429, error(429, 'rate_limit_exceeded', 'later'), {
        'x-ratelimit-reset': String(Math.ceil(Date.now() / 1000) + 50),
        'retry-after': '50',
      }),
    );
    await expect(client({ maxRetryDelayMs: 1000 }).jobs.status('news', JOB)).rejects.toBeInstanceOf(RateLimitError);
    expect(seen).toHaveLength(1);
  });

  it('retries a 503 of a GET with backoff, but not of a POST without an Idempotency-Key', async () => {
    handlers.push(
      (_req, res) => json(res, 503, error(503, 'service_unavailable', 'down')),
      (_req, res) => json(res, 200, { job_id: JOB, status: 'running', progress: 50, currently_working_on: 'x' }),
    );
    await expect(client().jobs.status('news', JOB)).resolves.toMatchObject({ status: 'running' });
    expect(seen).toHaveLength(2);

    seen = [];
    handlers.push((_req, res) => json(res, 503, error(503, 'service_unavailable', 'down')));
    const thrown = await client()
      .chat.send({ message: 'hi' })
      .catch((e: unknown) => e);
    expect(thrown).toBeInstanceOf(InternalServerError);
    expect((thrown as InternalServerError).status).toBe(503);
    expect(seen).toHaveLength(1);
  });

  it('retries a connection cut off, then reports APIConnectionError', async () => {
    for (let i = 0; i < 3; i++) handlers.push((req) => req.socket.destroy());
    await expect(client().customerTools.list()).rejects.toBeInstanceOf(APIConnectionError);
    expect(seen).toHaveLength(3);
  });

  it('waits Retry-After when a 429 has no X-RateLimit-Reset (the chat concurrency limit), then retries the message', async () => {
    handlers.push(
      (_req, res) =>
        json(res, 429, error(429, 'rate_limit_exceeded', 'Already 10 chat requests in flight.'), {
          'x-ratelimit-limit': '10',
          'x-ratelimit-remaining': '0',
          'retry-after': '1',
        }),
      (_req, res) => json(res, 200, { conversation_id: JOB, message_id: JOB, response: 'ok' }),
    );
    await expect(client().chat.send({ message: 'hi' })).resolves.toMatchObject({ response: 'ok' });
    expect(seen).toHaveLength(2);
    expect(seen[1]!.at - seen[0]!.at).toBeGreaterThanOrEqual(1000);
  });

  it('retries a product POST whose connection broke, with the same Idempotency-Key, so no second job starts', async () => {
    handlers.push(
      (req) => req.socket.destroy(),
      (_req, res) => json(res, 202, pending),
    );
    await expect(client().news.create({ symbols: ['AAPL'] })).resolves.toEqual(pending);
    expect(seen).toHaveLength(2);
    expect(seen[1]!.headers['idempotency-key']).toBe(seen[0]!.headers['idempotency-key']);
  });

  it('gives up an attempt after timeoutMs with APITimeoutError', async () => {
    handlers.push((_req, res) => setTimeout(() => json(res, 200, { tools: [] }), 1000));
    await expect(client({ timeoutMs: 100, maxRetries: 0 }).customerTools.list()).rejects.toBeInstanceOf(APITimeoutError);
  });
});

describe('redirects', () => {
  it('refuses a redirect to another origin without sending the API key there, and does not retry it', async () => {
    const elsewhere: IncomingMessage['headers'][] = [];
    const other = createServer((req, res) => {
      elsewhere.push(req.headers);
      res.end('{}');
    });
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    const otherUrl = `http://localhost:${(other.address() as AddressInfo).port}`;
    try {
      handlers.push((_req, res) => {
        res.writeHead(302, { location: `${otherUrl}/steal` }).end();
      });
      const thrown = await client()
        .customerTools.list()
        .catch((caught: unknown) => caught);
      expect(thrown).toBeInstanceOf(RedirectRefusedError);
      expect(thrown).toBeInstanceOf(APIConnectionError);
      expect((thrown as Error).message).toContain(`redirected to another origin (${otherUrl})`);
      expect(elsewhere).toEqual([]);
      expect(seen).toHaveLength(1);
    } finally {
      other.closeAllConnections();
      await new Promise<void>((resolve) => other.close(() => resolve()));
    }
  });

  it('follows a redirect within the origin, with the key', async () => {
    handlers.push((_req, res) => {
      res.writeHead(307, { location: '/api/customer-tools/?moved=1' }).end();
    });
    handlers.push((_req, res) => json(res, 200, { tools: [] }));
    await expect(client().customerTools.list()).resolves.toMatchObject({ tools: [] });
    expect(seen.map((request) => [request.url, request.headers['x-api-key']])).toEqual([
      ['/api/customer-tools/', 'fin_test'],
      ['/api/customer-tools/?moved=1', 'fin_test'],
    ]);
  });
});

describe('errors', () => {
  it('throws the subclass of the status with the error body', async () => {
    handlers.push((_req, res) => json(res, 400, error(400, 'validation_error', 'n: must be at most 20')));
    const thrown = await client()
      .news.create({ symbols: ['AAPL'], n: 99 })
      .result()
      .catch((e: unknown) => e);
    expect(thrown).toBeInstanceOf(ValidationError);
    expect(thrown).toMatchObject({ status: 400, type: 'validation_error', detail: 'n: must be at most 20', requestId: 'req-1' });
    expect(seen).toHaveLength(1);
  });

  it('describes an answer that is not the API error body (a proxy page) by its status', async () => {
    handlers.push((_req, res) => {
      res.writeHead(409, { 'content-type': 'text/html' });
      res.end('<h1>busy</h1>');
    });
    await expect(client().jobs.result('news', JOB)).rejects.toMatchObject({
      constructor: ConflictError,
      body: { status_code: 409, type: 'conflict', detail: '<h1>busy</h1>' },
    });
  });
});

describe('jobs', () => {
  it('result() follows the job event stream to its result event, reporting progress', async () => {
    const states: string[] = [];
    handlers.push(
      (_req, res) => json(res, 202, pending, { location: pending.status_url }),
      (_req, res) =>
        sse(res, [
          `id: 1\nevent: status\ndata: {"job_id":"${JOB}","status":"running","progress":10,"currently_working_on":"Searching"}\n\n`,
          `id: 2\nevent: progress\ndata: {"job_id":"${JOB}","progress":60,"currently_working_on":"Ranking"}\n\n`,
          `id: 3\nevent: result\ndata: {"job_id":"${JOB}","status":"completed","result":{"news":[{"title":"t"}]}}\n\n`,
        ]),
    );
    const result = await client()
      .news.create({ symbols: ['AAPL'] })
      .result({ onProgress: (status) => states.push(`${status.status} ${status.progress} ${status.currently_working_on}`) });
    expect(result).toEqual({ news: [{ title: 't' }] });
    expect(states).toEqual(['running 10 Searching', 'running 60 Ranking']);
    expect(seen.map((request) => `${request.method} ${request.url} ${request.headers.accept}`)).toEqual([
      'POST /api/products/news application/json',
      `GET /api/jobs/news/${JOB}/events text/event-stream`,
    ]);
  });

  it('result() polls the status until completed when the API has no event stream route (404), then reads the result', async () => {
    const statuses: string[] = [];
    handlers.push(
      (_req, res) => json(res, 202, pending, { location: pending.status_url }),
      (_req, res) => json(res, 404, error(404, 'not_found', 'No such route.')),
      (_req, res) => json(res, 200, { job_id: JOB, status: 'pending', progress: 0, currently_working_on: 'Queued' }),
      (_req, res) => json(res, 200, { job_id: JOB, status: 'completed', progress: 100, currently_working_on: 'Done' }),
      (_req, res) => json(res, 200, { job_id: JOB, status: 'completed', result: { news: [] } }),
    );
    const handle = client().news.create({ symbols: ['AAPL'] });
    const response = await handle.response;
    expect(response).toMatchObject({ status: 202, location: pending.status_url });
    const result = await handle.result({ pollIntervalMs: 10, onProgress: (status) => statuses.push(status.status) });
    expect(result).toEqual({ news: [] });
    expect(statuses).toEqual(['pending', 'completed']);
    expect(seen.map((request) => `${request.method} ${request.url}`)).toEqual([
      'POST /api/products/news',
      `GET /api/jobs/news/${JOB}/events`,
      `GET /api/jobs/news/${JOB}/status`,
      `GET /api/jobs/news/${JOB}/status`,
      `GET /api/jobs/news/${JOB}/result`,
    ]);
  });

  it('result() of a cached answer (200) is the result at once; Cache-Control and a given Idempotency-Key are sent', async () => {
    handlers.push((_req, res) => json(res, 200, { job_id: JOB, status: 'completed', from_cache: true, news: [{ title: 't' }] }));
    const result = await client()
      .news.create({ symbols: ['AAPL'] }, { cacheControl: 'no-cache', idempotencyKey: 'order-1' })
      .result();
    expect(result).toEqual({ news: [{ title: 't' }] });
    expect(seen[0]!.headers).toMatchObject({ 'cache-control': 'no-cache', 'idempotency-key': 'order-1' });
  });

  it('a failed job rejects result() with JobFailedError carrying its reason', async () => {
    handlers.push(
      (_req, res) => json(res, 202, { ...pending, status_url: `/api/jobs/analysis/${JOB}/status` }),
      (_req, res) =>
        sse(res, [`id: 9\nevent: error\ndata: ${JSON.stringify({ ...error(504, 'gateway_timeout', 'slow model'), job_id: JOB })}\n\n`]),
    );
    const thrown = await client()
      .analysis.create({ prompt: 'why' })
      .result({ pollIntervalMs: 10 })
      .catch((e: unknown) => e);
    expect(thrown).toBeInstanceOf(JobFailedError);
    expect(thrown).toMatchObject({ jobType: 'analysis', jobId: JOB, type: 'gateway_timeout', detail: 'slow model', status: 504 });
    expect(JSON.parse(seen[0]!.body)).toEqual({ prompt: 'why', output_format: { stream: false } });
    expect(seen).toHaveLength(2);
  });

  it('an analysis that failed while the API waited for it rejects result() with JobFailedError; awaiting the handle gives the API error', async () => {
    handlers.push((_req, res) =>
      json(res, 504, error(504, 'gateway_timeout', 'The model did not answer in time.'), { location: `/api/jobs/analysis/${JOB}/status` }),
    );
    const handle = client({ maxRetries: 0 }).analysis.create({ prompt: 'why' });
    await expect(handle.result()).rejects.toMatchObject({ constructor: JobFailedError, jobId: JOB, type: 'gateway_timeout', status: 504 });
    await expect(handle).rejects.toMatchObject({ constructor: InternalServerError, status: 504 });
    expect(seen).toHaveLength(1);
  });

  it('result() polls at once when the event stream is refused with 429 (too many open streams)', async () => {
    handlers.push(
      (_req, res) => json(res, 429, error(429, 'rate_limit_exceeded', 'Too many job event streams.'), { 'retry-after': '5' }),
      (_req, res) => json(res, 200, { job_id: JOB, status: 'completed', progress: 100, currently_working_on: 'Done' }),
      (_req, res) => json(res, 200, { job_id: JOB, status: 'completed', result: { news: [] } }),
    );
    await expect(client().jobs.wait('news', JOB)).resolves.toEqual({ news: [] });
    expect(seen.map((request) => request.url)).toEqual([
      `/api/jobs/news/${JOB}/events`,
      `/api/jobs/news/${JOB}/status`,
      `/api/jobs/news/${JOB}/result`,
    ]);
  });

  it('a job stream that ends without its result is resumed with Last-Event-ID', async () => {
    handlers.push(
      (_req, res) =>
        sse(res, [
          `retry: 5\nid: 4\nevent: status\ndata: {"job_id":"${JOB}","status":"running","progress":5,"currently_working_on":"a"}\n\n`,
        ]),
      (_req, res) => sse(res, [`id: 5\nevent: result\ndata: {"job_id":"${JOB}","status":"completed","result":{"quick_insights":[]}}\n\n`]),
    );
    await expect(client().jobs.wait('stock-report', JOB)).resolves.toEqual({ quick_insights: [] });
    expect(seen.map((request) => [request.url, request.headers['last-event-id']])).toEqual([
      [`/api/jobs/stock-report/${JOB}/events`, undefined],
      [`/api/jobs/stock-report/${JOB}/events`, '4'],
    ]);
  });
});

describe('streams', () => {
  it('chat.stream yields typed events and re-attaches with Last-Event-ID when the connection drops', async () => {
    const conversation = '9b2f3c1e-4d5a-4e6f-8a7b-0c1d2e3f4a5b';
    handlers.push(
      (req, res) => {
        sse(
          res,
          [
            'retry: 10\n\n',
            'id: r:1\nevent: node_start\ndata: {"type":"node_start","node":"answer"}\n\n',
            'id: r:2\nevent: token\ndata: {"type":"token","content":"Hel"}\n\n',
          ],
          false,
        );
        setTimeout(() => req.socket.destroy(), 20);
      },
      (_req, res) =>
        sse(res, [
          ': keep-alive\n\n',
          'id: r:3\nevent: token\ndata: {"type":"token","content":"lo"}\n\n',
          `id: r:4\nevent: done\ndata: {"type":"done","conversation_id":"${conversation}"}\n\n`,
        ]),
    );
    const stream = client().chat.stream({ message: 'hi' });
    const events = [];
    for await (const event of stream) events.push(event);
    expect(events.map((event) => [event.event, event.id])).toEqual([
      ['node_start', 'r:1'],
      ['token', 'r:2'],
      ['token', 'r:3'],
      ['done', 'r:4'],
    ]);
    expect(stream.conversationId).toBe(conversation);
    expect(seen[0]).toMatchObject({ method: 'POST', url: '/api/chat' });
    expect(JSON.parse(seen[0]!.body)).toEqual({ message: 'hi', stream: true });
    expect(seen[1]).toMatchObject({ method: 'GET', url: '/api/chat/stream' });
    expect(seen[1]!.headers['last-event-id']).toBe('r:2');
  });

  it('an error event ends the stream with the typed error of its status_code', async () => {
    handlers.push((_req, res) =>
      sse(
        res,
        [
          'id: r:1\nevent: token\ndata: {"type":"token","content":"a"}\n\n',
          `id: r:2\nevent: error\ndata: ${JSON.stringify(error(503, 'service_unavailable', 'shutting down'))}\n\n`,
        ],
        true,
        {
          'x-request-id': 'stream-1',
        },
      ),
    );
    const stream = client().chat.stream({ message: 'hi' });
    const thrown = await stream.finalReply().catch((e: unknown) => e);
    expect(thrown).toBeInstanceOf(InternalServerError);
    expect(thrown).toMatchObject({ status: 503, type: 'service_unavailable', detail: 'shutting down', requestId: 'stream-1' });
    expect(seen).toHaveLength(1);
  });

  it('mcp.send yields the JSON-RPC messages of an SSE answer, of a JSON answer, and none for a 202', async () => {
    handlers.push(
      (_req, res) =>
        sse(res, [
          'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress"}\n\n',
          'event: message\ndata: {"jsonrpc":"2.0","id":1,"result":{}}\n\n',
        ]),
      (_req, res) => json(res, 200, { jsonrpc: '2.0', id: 2, result: { tools: [] } }),
      (_req, res) => {
        res.writeHead(202);
        res.end();
      },
    );
    const messages = async (id: number) => {
      const all = [];
      for await (const event of client().mcp.send({ jsonrpc: '2.0', id, method: 'tools/list' })) all.push(event.data);
      return all;
    };
    await expect(messages(1)).resolves.toEqual([
      { jsonrpc: '2.0', method: 'notifications/progress' },
      { jsonrpc: '2.0', id: 1, result: {} },
    ]);
    await expect(messages(2)).resolves.toEqual([{ jsonrpc: '2.0', id: 2, result: { tools: [] } }]);
    await expect(messages(3)).resolves.toEqual([]);
    expect(JSON.parse(seen[0]!.body)).toEqual({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    expect(seen[0]!.headers.accept).toBe('application/json, text/event-stream');
  });

  it('a JSON answer where an event stream was asked for is an error, not an empty stream', async () => {
    handlers.push((_req, res) => json(res, 200, { job_id: JOB, status: 'completed' }));
    await expect(client().analysis.stream({ prompt: 'x' }).finalText()).rejects.toThrow('Expected an event stream, got application/json.');
  });

  it('aborting the signal stops reading a stream', async () => {
    handlers.push((_req, res) =>
      sse(res, ['event: synthesis_chunk\ndata: {"chunk":"a"}\n\n'], false, { location: `/api/jobs/analysis/${JOB}/status` }),
    );
    const controller = new AbortController();
    const stream = client().analysis.stream({ prompt: 'x' }, { signal: controller.signal });
    await expect(stream.job()).resolves.toEqual({ jobType: 'analysis', jobId: JOB });
    const chunks: string[] = [];
    const reading = (async () => {
      for await (const event of stream) {
        if (event.event === 'synthesis_chunk') chunks.push(event.data.chunk);
        controller.abort();
      }
    })();
    await expect(reading).rejects.toMatchObject({ name: 'AbortError' });
    expect(chunks).toEqual(['a']);
    expect(JSON.parse(seen[0]!.body)).toEqual({ prompt: 'x', output_format: { stream: true } });
  });
});

describe('filings', () => {
  const company = { cik: '0000320193', name: 'Apple Inc.' };
  const filing = {
    accession: '0000320193-25-000079',
    form: '10-K',
    filed: '2025-10-31',
    report_date: '2025-09-27',
    items: [],
    url: 'https://www.sec.gov/Archives/edgar/data/320193/000032019325000079/aapl-20250927.htm',
    primary_document: 'aapl-20250927.htm',
  };

  it('list sends the query as parameters (forms comma-separated) and returns the answer, an uncovered market included', async () => {
    const listed = { symbol: 'AAPL', company, filings: [filing], source: 'sec_edgar' };
    const uncovered = { symbol: '7203.T', company: null, filings: [], source: 'sec_edgar', note: 'No SEC filings for this market.' };
    handlers.push((_req, res) => json(res, 200, listed));
    handlers.push((_req, res) => json(res, 200, uncovered));
    await expect(client().filings.list({ symbol: 'AAPL', forms: '10-K,8-K', since: '2025-01-01', limit: 5 })).resolves.toEqual(listed);
    await expect(client().filings.list({ symbol: '7203.T' })).resolves.toEqual(uncovered);
    expect(seen.map(({ method, url }) => [method, url])).toEqual([
      ['GET', '/api/filings?symbol=AAPL&forms=10-K%2C8-K&since=2025-01-01&limit=5'],
      ['GET', '/api/filings?symbol=7203.T'],
    ]);
  });

  it('get and section address the filing and the item in the path, the symbol in the query', async () => {
    const sections = [{ item: '1A', title: 'Risk Factors', characters: 12 }];
    const section = { item: '1A', title: 'Risk Factors', text: 'Risks abound.' };
    handlers.push((_req, res) => json(res, 200, { symbol: 'AAPL', company, filing, sections, source: 'sample' }));
    handlers.push((_req, res) => json(res, 200, { symbol: 'AAPL', company, filing, section, source: 'sample' }));
    await expect(client().filings.get('AAPL', filing.accession)).resolves.toMatchObject({ sections });
    await expect(client().filings.section('AAPL', filing.accession, '1A')).resolves.toMatchObject({ section });
    expect(seen.map(({ url }) => url)).toEqual([
      '/api/filings/0000320193-25-000079?symbol=AAPL',
      '/api/filings/0000320193-25-000079/sections/1A?symbol=AAPL',
    ]);
  });

  it('a missing section is a NotFoundError with the detail naming the items there are', async () => {
    handlers.push((_req, res) =>
      json(res, 404, error(404, 'not_found', 'Filing 0000320193-25-000079 (10-K) has no item 9Z; its items are 1, 1A, 7.')),
    );
    const failure = client().filings.section('AAPL', filing.accession, '9Z');
    await expect(failure).rejects.toBeInstanceOf(NotFoundError);
    await expect(failure).rejects.toMatchObject({ status: 404, type: 'not_found', detail: expect.stringContaining('1, 1A, 7') as unknown });
  });
});

describe('coverage of the API', () => {
  it('has a client method for every operation of the OpenAPI document', () => {
    const document = createOpenApiDocument();
    const operationIds = Object.values(document.paths ?? {}).flatMap((item) =>
      ['get', 'post', 'put', 'delete', 'patch'].flatMap((method) => {
        const operation = (item as Record<string, { operationId?: string } | undefined>)[method];
        return operation?.operationId === undefined ? [] : [operation.operationId];
      }),
    );
    expect(Object.keys(OPERATION_METHODS).sort()).toEqual([...operationIds].sort());
    const instance = client() as unknown as Record<string, Record<string, unknown>>;
    for (const method of Object.values(OPERATION_METHODS)) {
      const [area, name] = method.split('.') as [string, string];
      expect([method, typeof instance[area]?.[name]]).toEqual([method, 'function']);
    }
  });
});
