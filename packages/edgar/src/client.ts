// The live FilingsSource: SEC EDGAR's JSON endpoints and filing archive
// (https://www.sec.gov/search-filings/edgar-application-programming-interfaces), with the deployment's one request
// schedule (fair-access.ts) and Postgres caches shared by every replica (store.ts).
//
// | what                              | where                                             | kept                          |
// |-----------------------------------|---------------------------------------------------|-------------------------------|
// | ticker → CIK                      | www.sec.gov/files/company_tickers.json            | in memory, a day              |
// | a company's filings               | data.sec.gov/submissions/CIK##########.json       | Postgres, an hour             |
// | its XBRL facts                    | data.sec.gov/api/xbrl/companyfacts/CIK##########.json | Postgres, a day           |
// | a filing's primary document       | www.sec.gov/Archives/edgar/data/{cik}/{accession}/{document} | Postgres, sections, for good |
//
// When EDGAR cannot be asked (its block, an outage), a cached copy past its time is served rather than nothing; its
// `fetchedAt` tells how old it is.
import { type Queryable } from '@fin/db';
import { type Logger } from '@fin/log';
import { EdgarError } from './errors';
import { blockedError, FairAccess, type FairAccessOptions } from './fair-access';
import { type Links, parseCompanyFacts, parseCompanyTickers, parseSubmissions, type TickerRecord } from './parse';
import { normaliseSymbol, selectFilings } from './query';
import { extractSections, SECTIONS_VERSION } from './sections';
import { EdgarStore } from './store';
import {
  AccessionNumber,
  type Company,
  type CompanyFacts,
  type Filing,
  type FilingDocument,
  type FilingsQuery,
  type FilingsSource,
} from './types';

export interface EdgarClientOptions {
  /** Operator and contact email, sent as the User-Agent of every request (EDGAR_USER_AGENT). */
  userAgent: string;
  /** The shared database: fair access and the caches. */
  pool: Queryable;
  /** www.sec.gov: the ticker map and the archive (EDGAR_BASE_URL). */
  baseUrl?: string;
  /** data.sec.gov: submissions and company facts (EDGAR_DATA_URL). */
  dataUrl?: string;
  /** Where readers open filings in the links we return; always EDGAR's public site unless a test says otherwise. */
  linkBase?: string;
  /** The time the caches' ages are measured against (tests move it on). */
  clock?: () => Date;
  /** Per request, including reading the body (default 20 s). */
  timeoutMs?: number;
  fairAccess?: FairAccessOptions;
  logger?: Logger;
}

const TICKERS_TTL_MS = 24 * 3_600_000;
const SUBMISSIONS_TTL_MS = 3_600_000;
const FACTS_TTL_MS = 24 * 3_600_000;
const DEFAULT_TIMEOUT_MS = 20_000;
/** Parsed company facts kept in memory (a large company's run to 100,000 values, half a second to parse). */
const FACTS_MEMO_SIZE = 32;

/** The page EDGAR answers with 403 when an address exceeds the rate or its tool is undeclared. */
const RATE_PAGE = /Request Rate Threshold Exceeded|Undeclared Automated Tool/i;

const trimSlash = (url: string) => url.replace(/\/+$/, '');

export class EdgarClient implements FilingsSource {
  readonly sample = false;
  readonly #userAgent: string;
  readonly #baseUrl: string;
  readonly #dataUrl: string;
  readonly #links: Links;
  readonly #clock: () => Date;
  readonly #timeoutMs: number;
  readonly #fair: FairAccess;
  readonly #store: EdgarStore;
  readonly #logger: Logger | undefined;
  #tickers: { map: Map<string, TickerRecord>; fetchedAt: number } | undefined;
  /** Parsed facts by symbol, valid while Postgres holds the copy they were parsed from. */
  readonly #factsMemo = new Map<string, CompanyFacts>();
  /** One request per resource at a time in this process: concurrent callers share it. */
  readonly #inFlight = new Map<string, Promise<unknown>>();

  constructor(options: EdgarClientOptions) {
    this.#userAgent = options.userAgent;
    this.#baseUrl = trimSlash(options.baseUrl ?? 'https://www.sec.gov');
    this.#dataUrl = trimSlash(options.dataUrl ?? 'https://data.sec.gov');
    this.#links = { archiveBase: trimSlash(options.linkBase ?? 'https://www.sec.gov'), sample: false };
    this.#clock = options.clock ?? (() => new Date());
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#fair = new FairAccess(options.pool, options.fairAccess);
    this.#store = new EdgarStore(options.pool);
    this.#logger = options.logger;
  }

  async company(symbol: string): Promise<Company | null> {
    const normalised = normaliseSymbol(symbol);
    if (normalised === '') return null;
    const record = (await this.#tickerMap()).get(normalised);
    return record ? { cik: record.cik, symbol: normalised, name: record.title, sample: false } : null;
  }

  async filings(symbol: string, query?: FilingsQuery): Promise<{ company: Company; filings: Filing[] } | null> {
    const company = await this.company(symbol);
    if (!company) return null;
    const found = await this.#submissions(company);
    return found && { company: found.company, filings: selectFilings(found.filings, query) };
  }

  async document(symbol: string, accession: AccessionNumber): Promise<FilingDocument | null> {
    if (!AccessionNumber.safeParse(accession).success) return null;
    const company = await this.company(symbol);
    if (!company) return null;
    const stored = await this.#store.document(accession);
    if (stored && stored.sectionsVersion === SECTIONS_VERSION)
      return stored.filing.cik === company.cik ? { filing: stored.filing, sections: stored.sections } : null;
    return this.#once(`document:${accession}`, async () => {
      const filing = (await this.#submissions(company))?.filings.find((candidate) => candidate.accession === accession);
      if (!filing || filing.primaryDocument === '') return null;
      const path = `/Archives/edgar/data/${Number(filing.cik)}/${accession.replaceAll('-', '')}/${filing.primaryDocument.split('/').map(encodeURIComponent).join('/')}`;
      const html = await this.#get(`${this.#baseUrl}${path}`);
      if (html === null) return null;
      const sections = extractSections(html, filing.form);
      await this.#store.saveDocument(filing, sections, SECTIONS_VERSION, this.#clock());
      return { filing, sections };
    });
  }

  async facts(symbol: string): Promise<CompanyFacts | null> {
    const company = await this.company(symbol);
    if (!company) return null;
    const key = `companyfacts:${company.cik}`;
    const storedAt = await this.#store.fetchedAt(key);
    const memo = this.#factsMemo.get(company.symbol);
    if (memo && storedAt && memo.fetchedAt === storedAt.toISOString() && this.#clock().getTime() - storedAt.getTime() < FACTS_TTL_MS)
      return memo;
    const body = await this.#cachedJson(key, `${this.#dataUrl}/api/xbrl/companyfacts/CIK${company.cik}.json`, FACTS_TTL_MS);
    if (!body) return null;
    const facts = parseCompanyFacts(body.body, company, this.#links, body.fetchedAt);
    this.#factsMemo.delete(company.symbol);
    this.#factsMemo.set(company.symbol, facts);
    if (this.#factsMemo.size > FACTS_MEMO_SIZE) this.#factsMemo.delete(this.#factsMemo.keys().next().value ?? '');
    return facts;
  }

  async #submissions(company: Company): Promise<{ company: Company; filings: Filing[] } | null> {
    const body = await this.#cachedJson(
      `submissions:${company.cik}`,
      `${this.#dataUrl}/submissions/CIK${company.cik}.json`,
      SUBMISSIONS_TTL_MS,
    );
    return body && parseSubmissions(body.body, company.symbol, this.#links);
  }

  async #tickerMap(): Promise<Map<string, TickerRecord>> {
    const now = this.#clock().getTime();
    if (this.#tickers && now - this.#tickers.fetchedAt < TICKERS_TTL_MS) return this.#tickers.map;
    return this.#once('tickers', async () => {
      let text: string | null;
      try {
        text = await this.#get(`${this.#baseUrl}/files/company_tickers.json`);
      } catch (error) {
        // A day-old map answers as well as a fresh one while EDGAR cannot be asked.
        if (!this.#tickers || !(error instanceof EdgarError) || (error.kind !== 'blocked' && error.kind !== 'unavailable')) throw error;
        this.#logger?.warn({ reason: error.message }, 'EDGAR cannot be asked: using the ticker map past its day');
        return this.#tickers.map;
      }
      if (text === null) throw new EdgarError('invalid_response', 'EDGAR has no company_tickers.json (404)');
      const map = parseCompanyTickers(parseJson(text, 'company_tickers.json'));
      this.#tickers = { map, fetchedAt: now };
      return map;
    });
  }

  /**
   * EDGAR's JSON at `url` through the Postgres cache: the stored copy while younger than `ttlMs`, else a fresh one
   * (stored for every replica); the stale copy when EDGAR cannot be asked; null when EDGAR has none (404).
   */
  async #cachedJson(key: string, url: string, ttlMs: number): Promise<{ body: unknown; fetchedAt: Date } | null> {
    const stored = await this.#store.response(key);
    if (stored && this.#clock().getTime() - stored.fetchedAt.getTime() < ttlMs) return stored;
    return this.#once(key, async () => {
      let text: string | null;
      try {
        text = await this.#get(url);
      } catch (error) {
        if (stored && error instanceof EdgarError && (error.kind === 'blocked' || error.kind === 'unavailable')) {
          this.#logger?.warn(
            { key, fetchedAt: stored.fetchedAt, reason: error.message },
            'EDGAR cannot be asked: serving the stored copy past its time',
          );
          return stored;
        }
        throw error;
      }
      if (text === null) return null;
      const body = parseJson(text, key.split(':')[0] ?? key);
      const fetchedAt = this.#clock();
      await this.#store.saveResponse(key, text, fetchedAt);
      return { body, fetchedAt };
    });
  }

  /** One GET within the deployment's fair access: the body's text, or null for 404. */
  async #get(url: string): Promise<string | null> {
    // The queue for a slot has its own bound (maxQueueMs); the timeout starts when the request leaves.
    await this.#fair.take();
    const signal = AbortSignal.timeout(this.#timeoutMs);
    let response: Response;
    let text: string;
    try {
      // fetch asks for and inflates gzip itself (Accept-Encoding: gzip, deflate, br).
      response = await fetch(url, {
        headers: { 'User-Agent': this.#userAgent, Accept: 'application/json, text/html;q=0.9, */*;q=0.8' },
        signal,
      });
      text = await response.text();
    } catch (error) {
      const what = signal.aborted ? `did not answer within ${this.#timeoutMs} ms` : 'could not be reached';
      throw new EdgarError('unavailable', `EDGAR ${what} (${pathOf(url)})`, { cause: error });
    }
    if (response.ok) return text;
    if (response.status === 404) return null;
    if (response.status === 429 || (response.status === 403 && RATE_PAGE.test(text))) {
      const until = await this.#fair.block(`${response.status} for ${pathOf(url)}`);
      this.#logger?.error(
        { status: response.status, url: pathOf(url), blockedUntil: until.toISOString() },
        'SEC EDGAR refused a request for exceeding its request rate (or an undeclared User-Agent): every replica stops until the block ends',
      );
      throw blockedError(until);
    }
    if (response.status === 403)
      throw new EdgarError(
        'forbidden',
        `EDGAR refused ${pathOf(url)} (403); check that EDGAR_USER_AGENT names the operator and a contact email`,
      );
    throw new EdgarError('unavailable', `EDGAR answered ${response.status} for ${pathOf(url)}`);
  }

  #once<T>(key: string, work: () => Promise<T>): Promise<T> {
    const pending = this.#inFlight.get(key) as Promise<T> | undefined;
    if (pending) return pending;
    const started = work().finally(() => this.#inFlight.delete(key));
    this.#inFlight.set(key, started);
    return started;
  }
}

function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new EdgarError('invalid_response', `EDGAR's ${what} is not JSON`, { cause: error });
  }
}

/** The path of a URL, for messages: the host is configuration, the path says what was asked. */
function pathOf(url: string): string {
  try {
    return new URL(url).pathname;
  } catch {
    return url;
  }
}
