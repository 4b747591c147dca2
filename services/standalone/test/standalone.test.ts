// `npm start` as a newcomer runs it: nothing configured (no DATABASE_URL, KAFKA_BROKERS or ANTHROPIC_API_KEY),
// the launcher in a process of its own, the banner's key and curl line used as printed. The system it starts is the
// compiled one, as in the images: dist/, no development condition, the image's NODE_OPTIONS.
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { AsyncJobResponse, JobStatusResponse, NewsResult } from '@fin/contracts';
import { SampleMarketDataProvider } from '@fin/ai';
import { sampleFilingsSource } from '@fin/edgar';
import { freePort, waitFor } from '@fin/testing';
import { postgresPidOf } from '../src/embedded-postgres';
import { REPOSITORY_ROOT, buildOnce, launchNpmStart, recordedProcess, type Launched } from './npm-start';

/** The banner's curl line, run as a shell would: its URL, headers and body. */
function curlLine(output: string): { url: string; key: string; body: string } {
  const line = output.split('\n').find((candidate) => candidate.trim().startsWith('curl -s -X POST'));
  const match = line?.match(/POST (\S+) -H 'X-API-Key: (\S+)' -H 'Content-Type: application\/json' -d '(.+)'$/);
  if (!match) throw new Error(`no curl line in:\n${output}`);
  return { url: match[1]!, key: match[2]!, body: match[3]! };
}

describe('npm start on embedded defaults', () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'fin-standalone-'));
  // As root, PostgreSQL runs as the postgres user, which must be able to enter the folder (mkdtemp makes it 700).
  chmodSync(dataDir, 0o755);
  let running: Launched | undefined;
  beforeAll(buildOnce, 300_000);
  afterEach(async () => {
    await running?.forceStop();
  });
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('prints a working key and curl line, stops cleanly on SIGTERM, and keeps jobs and keys across a restart', async () => {
    const port = await freePort();
    running = launchNpmStart({ DATA_DIR: dataDir, PORT: String(port) });
    await waitFor(() => running!.output().includes('Ctrl-C stops everything') || running!.child.exitCode !== null, {
      timeoutMs: 45_000,
      what: 'the banner',
    });
    const output = running.output();
    expect(output).toContain(`http://127.0.0.1:${port}`);
    expect(output).toContain(`http://127.0.0.1:${port}/portal/tools`);
    expect(output).toContain('embedded PostgreSQL');
    expect(output).toContain('in-process bus');
    expect(output).toContain('OFFLINE');
    // Local webhooks (WEBHOOK_ALLOW_LOCAL_HTTP) are off unless asked for.
    expect(output).not.toContain('Local webhooks');
    // What runs is the compiled system with the production image's NODE_OPTIONS.
    const system = recordedProcess(dataDir);
    expect(system.cwd).toBe(path.join(REPOSITORY_ROOT, 'services/standalone'));
    expect(system.argv.slice(1)).toEqual(['dist/main.js']);
    const imageOptions = /NODE_OPTIONS="([^"]+)"/.exec(readFileSync(path.join(REPOSITORY_ROOT, 'Dockerfile'), 'utf8'))?.[1];
    expect(imageOptions).toContain('--enable-source-maps');
    expect(system.env.NODE_OPTIONS).toBe(imageOptions);
    const metricsUrl = /Metrics \(Prometheus\): (\S+)/.exec(output)?.[1];
    expect(metricsUrl).toBeDefined();
    // One process, two ports: the API and the metrics (the services are units the gateway calls, not servers).
    expect(system.ports).toEqual([port, Number(new URL(metricsUrl!).port)].sort((a, b) => a - b));

    const { url, key, body } = curlLine(output);
    const headers = { 'X-API-Key': key, 'Content-Type': 'application/json' };
    const accepted = await fetch(url, { method: 'POST', headers, body });
    expect(accepted.status).toBe(202);
    const envelope = AsyncJobResponse.parse(await accepted.json());
    const base = `http://127.0.0.1:${port}`;
    await waitFor(
      async () => JobStatusResponse.parse(await (await fetch(`${base}${envelope.status_url}`, { headers })).json()).status === 'completed',
      {
        what: 'the job to complete',
      },
    );

    // Offline, every news item cites the bundled sample article it is written from: its URL, title and outlet,
    // and a passage copied verbatim from it; one also cites the company's results 8-K from the bundled EDGAR sample.
    const news = NewsResult.parse(
      ((await (await fetch(`${base}${envelope.result_url}`, { headers })).json()) as { result: unknown }).result,
    );
    const sample = new SampleMarketDataProvider();
    const requested = (JSON.parse(body) as { symbols: string[] }).symbols;
    const articles = (
      await Promise.all(requested.map((symbol) => sample.companyNews(symbol, { from: '2000-01-01', to: new Date(), limit: 50 })))
    ).flatMap((list) => list.items);
    expect(news.news.length).toBeGreaterThan(0);
    // Its usage is what the stand-in counted, billed as the API would bill it, and labelled offline: nothing was paid.
    expect(news.meta).toMatchObject({ offline: true, model: 'offline-analyst' });
    const usage = news.meta?.usage;
    expect(usage?.model_calls).toBeGreaterThan(0);
    // (Its input is mostly read from and written to the stand-in's prompt cache, as the API's would be.)
    expect((usage?.input_tokens ?? 0) + (usage?.cache_creation_input_tokens ?? 0) + (usage?.cache_read_input_tokens ?? 0)).toBeGreaterThan(
      0,
    );
    expect(usage?.output_tokens).toBeGreaterThan(0);
    const filings = sampleFilingsSource();
    expect(news.news.filter((item) => item.citations.some((citation) => citation.source === 'sec_filing'))).toHaveLength(1);
    for (const item of news.news) {
      expect(item.citations[0]?.source).toBe('market_data');
      for (const citation of item.citations) {
        if (citation.source === 'sec_filing') {
          // The company's latest results 8-K from the bundled EDGAR sample, quoted from its item 2.02.
          expect(citation.filing).toMatchObject({ form: '8-K', item: '2.02' });
          const documents = await Promise.all(requested.map((symbol) => filings.document(symbol, citation.filing!.accession)));
          const section = documents.find((document) => document !== null)?.sections.find((found) => found.item === '2.02');
          expect(section?.text).toContain(citation.quote);
          continue;
        }
        const article = articles.find((candidate) => candidate.url === citation.url);
        expect(article).toBeDefined();
        expect(`${article?.headline}\n${article?.summary}`).toContain(citation.quote);
        expect(citation).toMatchObject({ title: article?.headline, publisher: article?.source, source: 'market_data' });
      }
    }

    // The same key works for every product and the customer-tools API; the portal's pages are served.
    const post = (route: string, payload: unknown) => fetch(`${base}${route}`, { method: 'POST', headers, body: JSON.stringify(payload) });
    expect((await post('/api/products/stock-report', { symbols: ['AAPL', 'MSFT'] })).status).toBe(202);
    expect([200, 202]).toContain((await post('/api/analysis', { prompt: 'Is AAPL expensive?' })).status);
    const chat = await post('/api/chat', { message: 'What is the P/E of AAPL?', stream: false });
    expect(chat.status).toBe(200);
    expect(((await chat.json()) as { response: string }).response.length).toBeGreaterThan(0);
    expect((await fetch(`${base}/api/customer-tools/`, { headers })).status).toBe(200);
    const portal = await fetch(`${base}/portal/tools`, { redirect: 'manual' });
    expect([200, 302, 303]).toContain(portal.status);

    // One scrape shows the whole process: each request recorded once (by the gateway, which called news in-process,
    // so news records no second one), and the finished job.
    const scraped = await (await fetch(metricsUrl!)).text();
    expect(scraped).toMatch(/fin_http_requests_total\{service="gateway",method="POST",route="\/api\/products\/news",status="202"\} 1/);
    expect(scraped).not.toMatch(/fin_http_requests_total\{service="news"/);
    expect(scraped).toMatch(/fin_jobs_finished_total\{type="news",outcome="completed"\} 1/);

    expect(postgresPidOf(path.join(dataDir, 'postgres'))).toBeDefined();
    running.child.kill('SIGTERM');
    expect(await running.exited).toBe(0);
    // The embedded server stopped with the system rather than lingering.
    expect(postgresPidOf(path.join(dataDir, 'postgres'))).toBeUndefined();

    running = launchNpmStart({ DATA_DIR: dataDir, PORT: String(port) });
    await waitFor(() => running!.output().includes('Ctrl-C stops everything') || running!.child.exitCode !== null, {
      timeoutMs: 45_000,
      what: 'the banner',
    });
    // The same key again (still valid), and the job and its result are still there.
    expect(curlLine(running.output()).key).toBe(key);
    const result = await fetch(`${base}${envelope.result_url}`, { headers });
    expect(result.status).toBe(200);
    expect(NewsResult.parse(((await result.json()) as { result: unknown }).result).news.length).toBeGreaterThan(0);
    running.child.kill('SIGTERM');
    expect(await running.exited).toBe(0);
  });
});
