// A fake SEC EDGAR serving the bundled EDGAR sample at EDGAR's own paths, as strict as EDGAR where EDGAR is strict
// (https://www.sec.gov/search-filings/edgar-search-assistance/accessing-edgar-data): a request whose User-Agent does
// not declare a contact email gets the 403 page of undeclared tools; more than `requestsPerSecond` requests in one
// second get the 403 "Request Rate Threshold Exceeded" page and block every request for `blockMs` (EDGAR: 10
// minutes, extended while the rate is still exceeded); unknown CIKs and documents are 404. One origin serves both
// hosts' paths, so a client's EDGAR_BASE_URL (www.sec.gov) and EDGAR_DATA_URL (data.sec.gov) both point at `url`.
//
//   const edgar = await startFakeEdgar({ blockMs: 2_000 });
//   filingsSource({ online: true, userAgent: 'Example Ltd ops@example.com', baseUrl: edgar.url, dataUrl: edgar.url, pool });
import { gzipSync } from 'node:zlib';
import { sampleEdgarData, type SampleEdgarData } from '@fin/offline';
import { type Exchange, type ListenOptions, headerRecord, pause, startServer, waitForAbort } from '../http';

/** A misbehaviour applied to matching requests (all requests when no path is set). */
export interface EdgarFault {
  /** Requests whose path starts with this. */
  path?: string;
  /** Answer with this status (and a short body). */
  status?: number;
  /** Wait this long before answering. */
  latencyMs?: number;
  /** Never answer (until the client gives up or the fake closes). */
  hang?: boolean;
  /** Answer with this body (status 200 unless `status`). */
  body?: string;
  /** Apply to this many matching requests, then stop (default: every one). */
  times?: number;
}

export interface FakeEdgarOptions extends ListenOptions {
  /** Defaults to the bundled sample (@fin/offline sampleEdgarData). */
  data?: SampleEdgarData;
  /** Requests in one second (of the fake's clock) beyond which EDGAR blocks (default 10). */
  requestsPerSecond?: number;
  /** How long the block lasts (default 10 minutes, as EDGAR's page says). */
  blockMs?: number;
  faults?: EdgarFault[];
}

export interface EdgarRecordedRequest {
  method: string;
  path: string;
  /** Lower-cased header names. */
  headers: Record<string, string>;
  /** When it arrived (Date.now()). */
  at: number;
  status: number;
}

export interface FakeEdgar {
  /** Origin, e.g. http://127.0.0.1:41235: both EDGAR_BASE_URL and EDGAR_DATA_URL. */
  readonly url: string;
  /** Every request since start or the last reset(), in arrival order (a live array). */
  readonly requests: readonly EdgarRecordedRequest[];
  /** How many requests (answered or refused) had a path starting with `prefix` (every request without one). */
  count(prefix?: string): number;
  /** The most requests that arrived within one second of the fake's clock (of the last five minutes, at least). */
  peakPerSecond(): number;
  /** When the current block ends (Date.now() scale), or null. */
  blockedUntil(): number | null;
  addFault(fault: EdgarFault): void;
  clearFaults(): void;
  /** Clears the request log, the faults, the rate windows and any block. */
  reset(): void;
  close(): Promise<void>;
}

/** EDGAR's User-Agent rule: who is sending, with a contact email. */
const DECLARED = /[A-Za-z]{2,}.*\s\S+@\S+\.\S+/;

const SUBMISSIONS = /^\/submissions\/CIK(\d{10})\.json$/;
const COMPANY_FACTS = /^\/api\/xbrl\/companyfacts\/CIK(\d{10})\.json$/;
const ARCHIVE = /^\/Archives\/edgar\/data\/(\d{1,10})\/(\d{18})\/([^/]+)$/;

function refusalPage(heading: string, detail: string): string {
  return [
    '<!DOCTYPE html><html lang="en"><head><title>SEC.gov | Request Rate Threshold Exceeded</title></head><body>',
    `<h1>${heading}</h1>`,
    `<p>${detail}</p>`,
    '<p>To allow equitable access for everyone, the SEC limits automated access: at most 10 requests per second, ',
    'regardless of the number of machines, from tools that declare themselves with a User-Agent naming the ',
    'company and a contact email. See https://www.sec.gov/developer for efficient ways to download data.</p>',
    '<p>(This page is served by a test fake of SEC EDGAR.)</p></body></html>',
  ].join('');
}

const RATE_PAGE = refusalPage(
  'Request Rate Threshold Exceeded',
  'Your requests exceeded the allowed rate. Access is blocked for 10 minutes; it stays blocked while the rate is exceeded.',
);
const UNDECLARED_PAGE = refusalPage(
  'Your Request Originates from an Undeclared Automated Tool',
  'Please declare your traffic by updating your user agent to include company specific information.',
);
const NO_SUCH_KEY =
  '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message></Error>';
const NOT_FOUND_PAGE =
  '<!DOCTYPE html><html><head><title>SEC.gov | File Not Found Error Alert (404)</title></head><body><h1>File Not Found</h1></body></html>';

export async function startFakeEdgar(options: FakeEdgarOptions = {}): Promise<FakeEdgar> {
  const data = options.data ?? sampleEdgarData();
  const limit = options.requestsPerSecond ?? 10;
  const blockMs = options.blockMs ?? 10 * 60_000;
  let faults: Array<EdgarFault & { remaining: number }> = [];
  const requests: EdgarRecordedRequest[] = [];
  /** Requests per second of the fake's clock (Math.floor(Date.now() / 1000)), for the rate rule and peakPerSecond. */
  const perSecond = new Map<number, number>();
  let blockedUntil: number | null = null;

  const addFault = (fault: EdgarFault) => faults.push({ ...fault, remaining: fault.times ?? Number.POSITIVE_INFINITY });
  for (const fault of options.faults ?? []) addFault(fault);

  /** EDGAR's files at their paths: [status, content type, body]. */
  function route(path: string): [number, string, string] {
    const json = (value: unknown): [number, string, string] => [200, 'application/json', JSON.stringify(value)];
    if (path === '/files/company_tickers.json') return json(data.companyTickers);
    const submissions = SUBMISSIONS.exec(path);
    if (submissions) {
      const body = data.submissions[submissions[1] ?? ''];
      return body ? json(body) : [404, 'application/xml', NO_SUCH_KEY];
    }
    const facts = COMPANY_FACTS.exec(path);
    if (facts) {
      const body = data.companyFacts[facts[1] ?? ''];
      return body ? json(body) : [404, 'application/xml', NO_SUCH_KEY];
    }
    const archive = ARCHIVE.exec(path);
    if (archive) {
      const html = data.documents[`${archive[1] ?? ''}/${archive[2] ?? ''}/${decodeURIComponent(archive[3] ?? '')}`];
      return html === undefined ? [404, 'text/html', NOT_FOUND_PAGE] : [200, 'text/html', html];
    }
    return [404, 'text/html', NOT_FOUND_PAGE];
  }

  async function handle({ req, res, signal }: Exchange): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake');
    const headers = headerRecord(req);
    const now = Date.now();
    const record: EdgarRecordedRequest = { method: req.method ?? 'GET', path: url.pathname, headers, at: now, status: 0 };
    requests.push(record);
    req.resume();

    const respond = (status: number, contentType: string, body: string): void => {
      record.status = status;
      // EDGAR compresses for clients that ask.
      const gzipped = /\bgzip\b/.test(headers['accept-encoding'] ?? '');
      const payload = gzipped ? gzipSync(body) : Buffer.from(body);
      res.writeHead(status, {
        'content-type': `${contentType}; charset=utf-8`,
        'content-length': String(payload.length),
        ...(gzipped ? { 'content-encoding': 'gzip' } : {}),
      });
      res.end(payload);
    };

    // Every request counts towards the rate, refused ones included, as they do at EDGAR.
    const second = Math.floor(now / 1000);
    const inSecond = (perSecond.get(second) ?? 0) + 1;
    perSecond.set(second, inSecond);
    // A fake left running (a benchmark, a long session) keeps the last five minutes.
    if (perSecond.size > 600) for (const old of perSecond.keys()) if (old < second - 300) perSecond.delete(old);
    if (inSecond > limit) blockedUntil = Math.max(blockedUntil ?? 0, now + blockMs);
    if (blockedUntil !== null && now < blockedUntil) {
      respond(403, 'text/html', RATE_PAGE);
      return;
    }

    if (!DECLARED.test(headers['user-agent'] ?? '')) {
      respond(403, 'text/html', UNDECLARED_PAGE);
      return;
    }

    const fault = faults.find(
      (candidate) => candidate.remaining > 0 && (candidate.path === undefined || url.pathname.startsWith(candidate.path)),
    );
    if (fault) {
      fault.remaining--;
      if (fault.latencyMs && !(await pause(fault.latencyMs, signal))) return;
      if (fault.hang) return waitForAbort(signal);
      if (fault.body !== undefined) {
        respond(fault.status ?? 200, 'application/json', fault.body);
        return;
      }
      if (fault.status !== undefined) {
        respond(fault.status, 'text/html', `<html><body><h1>${fault.status}</h1></body></html>`);
        return;
      }
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      respond(405, 'text/plain', 'Method Not Allowed');
      return;
    }
    const [status, contentType, body] = route(url.pathname);
    respond(status, contentType, body);
  }

  const server = await startServer(
    handle,
    ({ res }, error) => {
      if (res.headersSent) return void res.destroy();
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(`fake-edgar: ${error instanceof Error ? error.message : String(error)}`);
    },
    options,
  );

  return {
    url: server.url,
    requests,
    count: (prefix) => (prefix === undefined ? requests.length : requests.filter((request) => request.path.startsWith(prefix)).length),
    peakPerSecond: () => Math.max(0, ...perSecond.values()),
    blockedUntil: () => (blockedUntil !== null && Date.now() < blockedUntil ? blockedUntil : null),
    addFault,
    clearFaults() {
      faults = [];
    },
    reset() {
      faults = [];
      requests.length = 0;
      perSecond.clear();
      blockedUntil = null;
    },
    close: () => server.close(),
  };
}
