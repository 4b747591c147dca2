// The fake EDGAR speaks EDGAR's paths and fair-access rules; the client's own tests live in packages/edgar.
import { gunzipSync } from 'node:zlib';
import { request } from 'node:http';
import { sampleEdgarData } from '@fin/offline';
import { startFakeEdgar, type FakeEdgar } from '../src';

const AGENT = 'Example Research Ltd ops@example.com';
let edgar: FakeEdgar;

beforeAll(async () => {
  edgar = await startFakeEdgar({ blockMs: 60_000 });
});
afterEach(() => edgar.reset());
afterAll(() => edgar.close());

async function get(path: string, userAgent: string | null = AGENT): Promise<{ status: number; text: string; type: string | null }> {
  const response = await fetch(`${edgar.url}${path}`, { headers: userAgent === null ? {} : { 'User-Agent': userAgent } });
  return { status: response.status, text: await response.text(), type: response.headers.get('content-type') };
}

/** fetch always sends a User-Agent of its own ("node"); a raw request can send none. */
function getWithoutUserAgent(path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(`${edgar.url}${path}`, { headers: {} }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.removeHeader('user-agent');
    req.on('error', reject);
    req.end();
  });
}

describe('paths', () => {
  it('serves the ticker map, submissions, company facts and documents of the sample', async () => {
    const data = sampleEdgarData();
    const tickers = await get('/files/company_tickers.json');
    expect(tickers.status).toBe(200);
    expect(JSON.parse(tickers.text)).toEqual(data.companyTickers);

    const submissions = await get('/submissions/CIK0000320193.json');
    expect(JSON.parse(submissions.text)).toEqual(data.submissions['0000320193']);
    const facts = await get('/api/xbrl/companyfacts/CIK0001045810.json');
    expect(JSON.parse(facts.text)).toMatchObject({ cik: 1045810, entityName: 'NVIDIA CORP' });

    const [path, html] = Object.entries(data.documents)[0]!;
    const document = await get(`/Archives/edgar/data/${path}`);
    expect(document).toMatchObject({ status: 200, text: html });
    expect(document.type).toMatch(/^text\/html/);
  });

  it('answers 404 for unknown CIKs and documents, and for CIKs not padded to 10 digits', async () => {
    expect((await get('/submissions/CIK0000000001.json')).status).toBe(404);
    expect((await get('/submissions/CIK320193.json')).status).toBe(404);
    expect((await get('/api/xbrl/companyfacts/CIK0000000001.json')).text).toContain('NoSuchKey');
    expect((await get('/Archives/edgar/data/320193/000032019325000001/nothing.htm')).status).toBe(404);
  });

  it('compresses for clients that accept gzip', async () => {
    const response = await new Promise<{ encoding: string | undefined; body: Buffer }>((resolve, reject) => {
      const req = request(
        `${edgar.url}/files/company_tickers.json`,
        { headers: { 'User-Agent': AGENT, 'Accept-Encoding': 'gzip' } },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => resolve({ encoding: res.headers['content-encoding'], body: Buffer.concat(chunks) }));
        },
      );
      req.on('error', reject);
      req.end();
    });
    expect(response.encoding).toBe('gzip');
    expect(JSON.parse(gunzipSync(response.body).toString('utf8'))).toEqual(sampleEdgarData().companyTickers);
  });
});

describe('fair access', () => {
  it('refuses a User-Agent that does not declare a contact email, and a request without one', async () => {
    const refused = await get('/files/company_tickers.json', 'node');
    expect(refused.status).toBe(403);
    expect(refused.text).toContain('Undeclared Automated Tool');
    expect(await getWithoutUserAgent('/files/company_tickers.json')).toBe(403);
    expect((await get('/files/company_tickers.json', 'ops@example.com')).status).toBe(403);
    // Refused, but not blocked: a declared request goes through.
    expect((await get('/files/company_tickers.json')).status).toBe(200);
  });

  it('blocks every request after more than 10 in one second, with the rate-threshold page', async () => {
    let statuses: number[] = [];
    // Twelve at once land in one second of the fake's clock unless they straddle its edge; then try again.
    for (let attempt = 0; attempt < 3 && !statuses.includes(403); attempt++) {
      edgar.reset();
      statuses = (await Promise.all(Array.from({ length: 12 }, () => get('/files/company_tickers.json')))).map(
        (response) => response.status,
      );
    }
    expect(statuses.filter((status) => status === 403).length).toBeGreaterThanOrEqual(1);
    expect(edgar.blockedUntil()).toBeGreaterThan(Date.now() + 50_000);
    const later = await get('/submissions/CIK0000320193.json');
    expect(later.status).toBe(403);
    expect(later.text).toContain('Request Rate Threshold Exceeded');
    expect(edgar.count('/files/')).toBeGreaterThanOrEqual(12);
    expect(edgar.peakPerSecond()).toBeGreaterThan(10);
  });

  it('lifts the block when its time has passed', async () => {
    const quick = await startFakeEdgar({ blockMs: 300, requestsPerSecond: 2 });
    try {
      let statuses: number[] = [];
      for (let attempt = 0; attempt < 3 && !statuses.includes(403); attempt++) {
        const answers = await Promise.all(
          [1, 2, 3].map(() => fetch(`${quick.url}/files/company_tickers.json`, { headers: { 'User-Agent': AGENT } })),
        );
        statuses = answers.map((response) => response.status);
      }
      expect(statuses).toContain(403);
      expect(quick.blockedUntil()).not.toBeNull();
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      expect(quick.blockedUntil()).toBeNull();
      expect((await fetch(`${quick.url}/files/company_tickers.json`, { headers: { 'User-Agent': AGENT } })).status).toBe(200);
    } finally {
      await quick.close();
    }
  });

  it('counts requests by path for tests that assert caching', async () => {
    await get('/files/company_tickers.json');
    await get('/submissions/CIK0000320193.json');
    await get('/submissions/CIK0000789019.json');
    expect(edgar.count('/submissions/')).toBe(2);
    expect(edgar.count()).toBe(3);
    expect(edgar.requests[0]).toMatchObject({ path: '/files/company_tickers.json', status: 200 });
    expect(edgar.requests[0]!.headers['user-agent']).toBe(AGENT);
  });
});
