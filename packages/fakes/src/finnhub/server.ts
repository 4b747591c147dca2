// A fake Finnhub REST API (https://finnhub.io/docs/api) serving the sample dataset: quote, company profile, basic
// financials (metric=all) and company news, with Finnhub's authentication, error bodies, rate-limit headers and its
// habit of answering an unknown symbol with zeros or an empty object instead of an error.
//
//   const finnhub = await startFakeFinnhub({ token: 'test-token' });
//   const provider = new FinnhubProvider({ baseUrl: finnhub.apiBaseUrl, token: 'test-token' });
import { SAMPLE_MARKET_DATA, type SampleMarketData } from '@fin/offline';
import { type Exchange, type ListenOptions, headerRecord, pause, sendJson, startServer, waitForAbort } from '../http';

/** A misbehaviour applied to matching requests (all requests when no filter is set). */
export interface FinnhubFault {
  /** Endpoint path below /api/v1, e.g. '/quote', '/stock/metric', '/company-news'. */
  endpoint?: string;
  /** Only requests for this symbol. */
  symbol?: string;
  /** Answer with this status and the body Finnhub sends with it (401, 403, 429, 5xx…). */
  status?: number;
  /** Wait this long before answering. */
  latencyMs?: number;
  /** Never answer (until the client gives up or the fake closes). */
  hang?: boolean;
  /** Answer 200 (or `status`) with this raw body instead. */
  body?: string;
  /** Stream the body without a content-length header (so a client cannot see its size up front). */
  chunked?: boolean;
  /** Apply to this many matching requests, then stop (default: every one). */
  times?: number;
}

export interface FakeFinnhubOptions extends ListenOptions {
  /** The only API key accepted (header X-Finnhub-Token or query `token`). */
  token: string;
  /** Defaults to SAMPLE_MARKET_DATA. */
  data?: SampleMarketData;
  faults?: FinnhubFault[];
  /** Requests per minute before the API's 429 (default: unlimited). */
  rateLimitPerMinute?: number;
}

export interface FinnhubRecordedRequest {
  method: string;
  /** Path below /api/v1 (e.g. '/stock/profile2'). */
  endpoint: string;
  /** The query parameters as sent (including `token` when the client put it there). */
  query: Record<string, string>;
  /** Lower-cased header names. */
  headers: Record<string, string>;
  /** Where the client put its key, if anywhere. */
  tokenVia: 'header' | 'query' | null;
  status: number;
}

export interface FakeFinnhub {
  /** Origin, e.g. http://127.0.0.1:41235. */
  readonly url: string;
  /** The API root to configure clients with: `${url}/api/v1`. */
  readonly apiBaseUrl: string;
  /** Every request since start or the last reset(), in arrival order (a live array). */
  readonly requests: readonly FinnhubRecordedRequest[];
  addFault(fault: FinnhubFault): void;
  clearFaults(): void;
  /** Clears the request log, the faults and the rate-limit window. */
  reset(): void;
  close(): Promise<void>;
}

/** The endpoints of Finnhub's paid plans that a free key is refused (403). */
const PREMIUM_ENDPOINTS = new Set([
  '/stock/price-target',
  '/stock/revenue-estimate',
  '/stock/eps-estimate',
  '/stock/ownership',
  '/stock/fund-ownership',
]);

const DATE = /^\d{4}-\d{2}-\d{2}$/;

/** The bodies Finnhub answers its error statuses with. */
function errorResponse(status: number): { contentType: string; body: string } {
  const json = (error: string) => ({ contentType: 'application/json; charset=utf-8', body: JSON.stringify({ error }) });
  switch (status) {
    case 401:
      return json('Invalid API key.');
    case 403:
      return json("You don't have access to this resource.");
    case 429:
      return json('API limit reached. Please try again later. Remaining Limit: 0');
    case 500:
      return json('Internal server error.');
    default:
      // What the edge proxy in front of the API returns when the backend is down or slow.
      return status >= 500
        ? {
            contentType: 'text/html',
            body: `<html><head><title>${status}</title></head><body><center><h1>${status}</h1></center></body></html>`,
          }
        : json(`Request failed with status ${status}.`);
  }
}

export async function startFakeFinnhub(options: FakeFinnhubOptions): Promise<FakeFinnhub> {
  const data = options.data ?? SAMPLE_MARKET_DATA;
  let faults: Array<FinnhubFault & { remaining: number }> = [];
  const requests: FinnhubRecordedRequest[] = [];
  let windowStart = Date.now();
  let windowCount = 0;

  const addFault = (fault: FinnhubFault) => faults.push({ ...fault, remaining: fault.times ?? Number.POSITIVE_INFINITY });
  for (const fault of options.faults ?? []) addFault(fault);

  function rateLimitHeaders(): Record<string, string> {
    const limit = options.rateLimitPerMinute ?? 60;
    return {
      'x-ratelimit-limit': String(limit),
      'x-ratelimit-remaining': String(Math.max(0, limit - windowCount)),
      'x-ratelimit-reset': String(Math.ceil((windowStart + 60_000) / 1000)),
    };
  }

  /** The documented endpoints over the dataset: [status, JSON body]. */
  function route(endpoint: string, query: URLSearchParams): [number, unknown] {
    const symbol = query.get('symbol') ?? '';
    const entry = Object.hasOwn(data.symbols, symbol) ? data.symbols[symbol] : undefined;
    if (!symbol) return [422, { error: 'Symbol is required.' }];
    switch (endpoint) {
      case '/quote':
        // Finnhub does not error on an unknown symbol: every field is zero and the changes are null.
        return [200, entry?.quote ?? { c: 0, d: null, dp: null, h: 0, l: 0, o: 0, pc: 0, t: 0 }];
      case '/stock/profile2':
        return [200, entry?.profile ?? {}];
      case '/stock/metric':
        return [200, entry?.metrics ?? { metric: {}, metricType: query.get('metric') ?? 'all', series: {}, symbol }];
      case '/company-news': {
        const from = query.get('from') ?? '';
        const to = query.get('to') ?? '';
        if (!DATE.test(from) || !DATE.test(to)) return [422, { error: 'Wrong date format. Please use YYYY-MM-DD.' }];
        const start = Date.parse(`${from}T00:00:00Z`) / 1000;
        const end = Date.parse(`${to}T23:59:59Z`) / 1000;
        const items = (entry?.news ?? []).filter((item) => item.datetime >= start && item.datetime <= end);
        return [200, [...items].sort((a, b) => b.datetime - a.datetime)];
      }
      default:
        return [404, undefined];
    }
  }

  async function handle({ req, res, signal }: Exchange): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake');
    const headers = headerRecord(req);
    const endpoint = url.pathname.startsWith('/api/v1/') ? url.pathname.slice('/api/v1'.length) : url.pathname;
    const query = Object.fromEntries(url.searchParams);
    const headerToken = headers['x-finnhub-token'];
    const queryToken = url.searchParams.get('token');
    const record: FinnhubRecordedRequest = {
      method: req.method ?? 'GET',
      endpoint,
      query,
      headers,
      tokenVia: headerToken ? 'header' : queryToken ? 'query' : null,
      status: 0,
    };
    requests.push(record);
    req.resume();

    const respond = (status: number, contentType: string, body: string, chunked = false): void => {
      record.status = status;
      const head: Record<string, string> = { ...rateLimitHeaders(), 'content-type': contentType };
      if (!chunked) head['content-length'] = String(Buffer.byteLength(body));
      res.writeHead(status, head);
      if (!chunked) {
        res.end(body);
        return;
      }
      // Several writes so the client receives it in pieces, as a large chunked response arrives.
      const size = Math.max(1, Math.ceil(body.length / 8));
      for (let start = 0; start < body.length; start += size) res.write(body.slice(start, start + size));
      res.end();
    };
    const respondError = (status: number): void => {
      const { contentType, body } = errorResponse(status);
      respond(status, contentType, body);
    };

    const token = headerToken ?? queryToken;
    if (!token) {
      record.status = 401;
      sendJson(res, 401, { error: 'Please use an API key.' }, rateLimitHeaders());
      return;
    }
    if (token !== options.token) {
      respondError(401);
      return;
    }

    if (Date.now() - windowStart >= 60_000) {
      windowStart = Date.now();
      windowCount = 0;
    }
    windowCount++;

    const fault = faults.find(
      (candidate) =>
        candidate.remaining > 0 &&
        (candidate.endpoint === undefined || candidate.endpoint === endpoint) &&
        (candidate.symbol === undefined || candidate.symbol === url.searchParams.get('symbol')),
    );
    if (fault) {
      fault.remaining--;
      if (fault.latencyMs && !(await pause(fault.latencyMs, signal))) return;
      if (fault.hang) return waitForAbort(signal);
      if (fault.body !== undefined) {
        respond(fault.status ?? 200, 'application/json; charset=utf-8', fault.body, fault.chunked);
        return;
      }
      if (fault.status !== undefined) {
        respondError(fault.status);
        return;
      }
    }

    if (options.rateLimitPerMinute !== undefined && windowCount > options.rateLimitPerMinute) {
      respondError(429);
      return;
    }
    if (PREMIUM_ENDPOINTS.has(endpoint)) {
      respondError(403);
      return;
    }
    if (req.method !== 'GET') {
      respond(405, 'text/plain; charset=utf-8', 'Method Not Allowed');
      return;
    }
    const [status, body] = route(endpoint, url.searchParams);
    if (status === 404) {
      respond(404, 'text/plain; charset=utf-8', '404 page not found');
      return;
    }
    respond(status, 'application/json; charset=utf-8', JSON.stringify(body), fault?.chunked);
  }

  const server = await startServer(
    handle,
    ({ res }, error) => {
      if (!res.headersSent) sendJson(res, 500, { error: `fake-finnhub: ${error instanceof Error ? error.message : String(error)}` });
      else res.destroy();
    },
    options,
  );

  return {
    url: server.url,
    apiBaseUrl: `${server.url}/api/v1`,
    requests,
    addFault,
    clearFaults() {
      faults = [];
    },
    reset() {
      faults = [];
      requests.length = 0;
      windowStart = Date.now();
      windowCount = 0;
    },
    close: () => server.close(),
  };
}
