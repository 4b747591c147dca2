// The live client against the fake EDGAR (packages/fakes), on a database of its own: the User-Agent, the one request
// schedule of the deployment, EDGAR's block, the caches, and symbols EDGAR does not know.
import { bool, ConfigError, parseConfig } from '@fin/config';
import { createPool, type Pool } from '@fin/db';
import { startFakeEdgar, type FakeEdgar } from '@fin/fakes';
import { sampleEdgarData, type SampleEdgarData } from '@fin/offline';
import { createTestDatabase, type TestDatabase } from '@fin/testing';
import { z } from 'zod';
import { EdgarClient, type EdgarClientOptions, EdgarError, edgarConfigShape, filingsSource } from '../src';

const AGENT = 'Example Research Ltd ops@example.com';
const HOUR = 3_600_000;

let db: TestDatabase;
let pool: Pool;
let edgar: FakeEdgar;

beforeAll(async () => {
  db = await createTestDatabase();
  pool = createPool({ connectionString: db.url, applicationName: 'edgar-tests', max: 4 });
  edgar = await startFakeEdgar({ blockMs: 60_000 });
});
beforeEach(async () => {
  edgar.reset();
  await pool.query('TRUNCATE edgar_responses, edgar_documents');
  await pool.query('UPDATE edgar_fair_access SET next_at = now(), blocked_until = NULL, block_reason = NULL');
});
afterAll(async () => {
  await edgar.close();
  await pool.end();
  await db.drop();
});

function client(options: Partial<EdgarClientOptions> = {}): EdgarClient {
  return new EdgarClient({ userAgent: AGENT, pool, baseUrl: edgar.url, dataUrl: edgar.url, ...options });
}

/** A clock the test moves on. */
function movableClock(start = Date.parse('2026-11-20T12:00:00Z')) {
  let now = start;
  return { clock: () => new Date(now), advance: (ms: number) => (now += ms) };
}

describe('requests', () => {
  it('sends the operator User-Agent on every request and links filings and facts to www.sec.gov', async () => {
    const source = client();
    const found = await source.filings('AAPL');
    const facts = await source.facts('AAPL');
    expect(edgar.count()).toBe(3);
    for (const request of edgar.requests) expect(request.headers['user-agent']).toBe(AGENT);
    expect(found?.company).toEqual({ cik: '0000320193', symbol: 'AAPL', name: 'Apple Inc.', sample: false });
    const tenK = found!.filings.find((filing) => filing.form === '10-K')!;
    expect(tenK.url).toBe(`https://www.sec.gov/Archives/edgar/data/320193/${tenK.accession.replaceAll('-', '')}/${tenK.primaryDocument}`);
    expect(tenK.sample).toBe(false);
    const fact = facts!.facts[0]!;
    expect(fact.url).toBe(
      `https://www.sec.gov/Archives/edgar/data/320193/${fact.accession.replaceAll('-', '')}/${fact.accession}-index.htm`,
    );
    expect(facts!.sample).toBe(false);
  });

  it('parses what EDGAR serves exactly as the sample source does', async () => {
    const sample = filingsSource({ online: false });
    const live = await client().filings('NVDA', { forms: ['8-K'], limit: 3 });
    const offline = await sample.filings('NVDA', { forms: ['8-K'], limit: 3 });
    expect(live!.filings.map((filing) => [filing.accession, filing.items])).toEqual(
      offline!.filings.map((filing) => [filing.accession, filing.items]),
    );
    expect(live!.filings.every((filing) => filing.form === '8-K')).toBe(true);
  });

  it('answers null for symbols EDGAR does not know and for companies without filings or facts, fetching the ticker map once', async () => {
    const data: SampleEdgarData = {
      ...sampleEdgarData(),
      companyTickers: { ...sampleEdgarData().companyTickers, '99': { cik_str: 1, ticker: 'NOFILE', title: 'No Files Inc.' } },
    };
    const sparse = await startFakeEdgar({ data });
    try {
      const source = client({ baseUrl: sparse.url, dataUrl: sparse.url });
      expect(await source.company('VOD.L')).toBeNull();
      expect(await source.filings('ZZZZ')).toBeNull();
      expect(await source.facts('SAP.DE')).toBeNull();
      expect(await source.document('ZZZZ', '0000320193-25-900114')).toBeNull();
      expect(sparse.count('/files/company_tickers.json')).toBe(1);
      expect(sparse.count()).toBe(1);
      // Known to the ticker map, unknown to data.sec.gov (404): no filings, no facts.
      expect(await source.company('NOFILE')).toMatchObject({ cik: '0000000001', name: 'No Files Inc.' });
      expect(await source.filings('NOFILE')).toBeNull();
      expect(await source.facts('NOFILE')).toBeNull();
      expect(sparse.count('/submissions/CIK0000000001.json')).toBe(1);
    } finally {
      await sparse.close();
    }
  });

  it('turns 5xx into EdgarError unavailable (503), and serves a stored copy past its time instead when it has one', async () => {
    const { clock, advance } = movableClock();
    const source = client({ clock });
    edgar.addFault({ path: '/api/xbrl/', status: 502, times: 1 });
    const failure = await source.facts('MSFT').catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(EdgarError);
    expect(failure).toMatchObject({ kind: 'unavailable', status: 503 });

    const fresh = await source.facts('MSFT');
    advance(25 * HOUR);
    edgar.addFault({ path: '/api/xbrl/', status: 503 });
    const stale = await source.facts('MSFT');
    expect(stale?.fetchedAt).toBe(fresh?.fetchedAt);
    expect(stale?.facts.length).toBe(fresh?.facts.length);
    expect(edgar.count('/api/xbrl/')).toBe(3);
  });
});

describe('start-up', () => {
  it('refuses online mode without EDGAR_USER_AGENT, naming the variable with an example', () => {
    const attempt = () => filingsSource({ online: true, pool, baseUrl: edgar.url, dataUrl: edgar.url });
    expect(attempt).toThrow(ConfigError);
    expect(attempt).toThrow(/EDGAR_USER_AGENT: is required .*e\.g\. EDGAR_USER_AGENT="Example Research Ltd ops@example\.com"/s);
  });

  it('checks the variable with the rest of the config: required when EDGAR is online, by EDGAR_OFFLINE or the AI engine', () => {
    // A process's shape spreads the AI engine's variables beside EDGAR's (a stand-in for them here).
    const shape = { ...edgarConfigShape, ANTHROPIC_API_KEY: z.string().optional(), AI_OFFLINE: bool().default(false) };
    const key = { ANTHROPIC_API_KEY: 'sk-ant-test-0123456789' };
    expect(() => parseConfig(shape, key)).toThrow(/EDGAR_USER_AGENT: is required/);
    expect(() => parseConfig(shape, { EDGAR_OFFLINE: 'false' })).toThrow(/EDGAR_USER_AGENT: is required/);
    expect(() => parseConfig(shape, {})).not.toThrow();
    expect(() => parseConfig(shape, { ...key, EDGAR_OFFLINE: 'true' })).not.toThrow();
    expect(() => parseConfig(shape, { ...key, AI_OFFLINE: 'true' })).not.toThrow();
    expect(() => parseConfig(shape, { ...key, EDGAR_USER_AGENT: 'my-scraper/1.0' })).toThrow(
      /EDGAR_USER_AGENT: must name the operator and a contact email/,
    );
    expect(parseConfig(shape, { ...key, EDGAR_USER_AGENT: AGENT })).toMatchObject({
      EDGAR_USER_AGENT: AGENT,
      EDGAR_BASE_URL: 'https://www.sec.gov',
      EDGAR_DATA_URL: 'https://data.sec.gov',
    });
  });

  it('uses the bundled sample offline, and EDGAR online', () => {
    expect(filingsSource({ online: false }).sample).toBe(true);
    expect(filingsSource({ online: true, userAgent: AGENT, pool }).sample).toBe(false);
  });
});

describe('fair access', () => {
  it('spaces the requests of two clients on one database within 10 a second, counted at EDGAR', async () => {
    const data = sampleEdgarData();
    const accessions = (cik: string) => data.submissions[cik]!.filings.recent.accessionNumber;
    const apple = client();
    const microsoft = client();
    const started = Date.now();
    const documents = await Promise.all([
      ...accessions('0000320193').map((accession) => apple.document('AAPL', accession)),
      ...accessions('0000789019').map((accession) => microsoft.document('MSFT', accession)),
    ]);
    const elapsed = Date.now() - started;
    expect(documents.every((document) => document !== null && document.sections.length > 0)).toBe(true);
    // Per client: the ticker map, the submissions and one request per document.
    const requests = edgar.count();
    expect(requests).toBe(2 * 2 + accessions('0000320193').length + accessions('0000789019').length);
    expect(edgar.requests.every((request) => request.status === 200)).toBe(true);
    expect(edgar.peakPerSecond()).toBeLessThanOrEqual(10);
    // One schedule for both: the last request left no sooner than (n - 1) intervals after the first.
    expect(elapsed).toBeGreaterThanOrEqual((requests - 1) * 110 * 0.95);
  });

  it("honours EDGAR's block in every client: after the rate-threshold 403 none asks until it has passed", async () => {
    const strict = await startFakeEdgar({ requestsPerSecond: 0, blockMs: 60_000 });
    try {
      const fairAccess = { blockMs: 1_500 };
      const first = client({ baseUrl: strict.url, dataUrl: strict.url, fairAccess });
      const second = client({ baseUrl: strict.url, dataUrl: strict.url, fairAccess });
      const refused = await first.company('AAPL').catch((error: unknown) => error);
      expect(refused).toMatchObject({ kind: 'blocked', status: 503 });
      expect((refused as EdgarError).retryAt!.getTime()).toBeGreaterThan(Date.now() + 1_000);
      expect((refused as EdgarError).message).toMatch(/blocked .* until/);
      const { rows } = await pool.query<{ blocked_until: Date | null }>('SELECT blocked_until FROM edgar_fair_access');
      expect(rows[0]?.blocked_until?.getTime()).toBe((refused as EdgarError).retryAt!.getTime());

      await expect(second.company('AAPL')).rejects.toMatchObject({ kind: 'blocked' });
      await expect(first.filings('MSFT')).rejects.toMatchObject({ kind: 'blocked' });
      expect(strict.count()).toBe(1);

      // EDGAR lets us in again (here: a fake without the rule), and the block in Postgres runs out.
      await new Promise((resolve) => setTimeout(resolve, 1_600));
      const open = client({ fairAccess });
      expect((await open.company('AAPL'))?.cik).toBe('0000320193');
      expect(strict.count()).toBe(1);
    } finally {
      await strict.close();
    }
  });

  it('treats 429 as the block too', async () => {
    edgar.addFault({ path: '/files/', status: 429, times: 1 });
    await expect(client({ fairAccess: { blockMs: 200 } }).company('AAPL')).rejects.toMatchObject({ kind: 'blocked' });
    const { rows } = await pool.query<{ block_reason: string }>('SELECT block_reason FROM edgar_fair_access');
    expect(rows[0]?.block_reason).toContain('429');
  });

  it('fails a request that would queue longer than allowed instead of holding it', async () => {
    await pool.query("UPDATE edgar_fair_access SET next_at = clock_timestamp() + interval '5 seconds'");
    await expect(client({ fairAccess: { maxQueueMs: 1_000 } }).company('AAPL')).rejects.toMatchObject({ kind: 'unavailable' });
    expect(edgar.count()).toBe(0);
  });
});

describe('caches', () => {
  it('keeps documents by accession number: a second client reads the sections without asking EDGAR', async () => {
    const accession = (await filingsSource({ online: false }).filings('AAPL', { forms: ['10-K'], limit: 1 }))!.filings[0]!.accession;
    const first = await client().document('AAPL', accession);
    const documentRequests = () => edgar.requests.filter((request) => request.path.startsWith('/Archives/')).length;
    expect(documentRequests()).toBe(1);
    const again = await client().document('AAPL', accession);
    expect(documentRequests()).toBe(1);
    expect(edgar.count('/submissions/')).toBe(1);
    expect(again).toEqual(first);
    expect(again!.sections.map((section) => section.item)).toEqual(expect.arrayContaining(['1A', '7']));
    // Cached under one company, not served for another's symbol.
    expect(await client().document('MSFT', accession)).toBeNull();
  });

  it('refreshes company facts after 24 hours and submissions after an hour, by the clock it is given', async () => {
    const { clock, advance } = movableClock();
    const source = client({ clock });
    const first = await source.facts('MSFT');
    await source.filings('MSFT');
    advance(30 * 60_000);
    expect((await source.facts('MSFT'))?.fetchedAt).toBe(first?.fetchedAt);
    await source.filings('MSFT');
    expect(edgar.count('/api/xbrl/companyfacts/')).toBe(1);
    expect(edgar.count('/submissions/')).toBe(1);

    advance(HOUR);
    await source.filings('MSFT');
    expect(edgar.count('/submissions/')).toBe(2);
    expect((await source.facts('MSFT'))?.fetchedAt).toBe(first?.fetchedAt);
    expect(edgar.count('/api/xbrl/companyfacts/')).toBe(1);

    advance(23 * HOUR);
    const refreshed = await source.facts('MSFT');
    expect(edgar.count('/api/xbrl/companyfacts/')).toBe(2);
    expect(refreshed?.fetchedAt).toBe(clock().toISOString());
    // Another replica finds the refreshed copy in Postgres.
    await client({ clock }).facts('MSFT');
    expect(edgar.count('/api/xbrl/companyfacts/')).toBe(2);
  });

  it('keeps parsed facts in memory while Postgres holds the copy they came from', async () => {
    const { clock, advance } = movableClock();
    const first = client({ clock });
    const parsed = await first.facts('GOOGL');
    expect(await first.facts('GOOGL')).toBe(parsed);
    advance(25 * HOUR);
    // Another replica refreshes the copy; this one notices and parses the new one.
    const refreshed = await client({ clock }).facts('GOOGL');
    const again = await first.facts('GOOGL');
    expect(again).not.toBe(parsed);
    expect(again?.fetchedAt).toBe(refreshed?.fetchedAt);
    expect(edgar.count('/api/xbrl/companyfacts/')).toBe(2);
  });

  it('keeps using a ticker map past its day while EDGAR cannot be asked', async () => {
    const { clock, advance } = movableClock();
    const source = client({ clock });
    expect((await source.company('AMZN'))?.cik).toBe('0001018724');
    advance(25 * HOUR);
    edgar.addFault({ path: '/files/', status: 503 });
    expect((await source.company('AMZN'))?.cik).toBe('0001018724');
    expect(edgar.count('/files/company_tickers.json')).toBe(2);
    // Without a map to fall back on, the failure is the caller's.
    await expect(client({ clock }).company('AMZN')).rejects.toMatchObject({ kind: 'unavailable' });
  });

  it('shares one request among concurrent callers of one client', async () => {
    const source = client();
    await Promise.all([source.facts('TSLA'), source.facts('TSLA'), source.facts('TSLA')]);
    expect(edgar.count('/api/xbrl/companyfacts/')).toBe(1);
    expect(edgar.count('/files/company_tickers.json')).toBe(1);
  });
});
