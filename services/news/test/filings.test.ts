// The news service as deployed on its own (no engine shared, as in Kubernetes or Compose): the engine it makes from
// its config is given SEC EDGAR, so its runs are offered the sec_filings tool and cite a company's results 8-K.
// Claude is a fake Messages API answered by the offline analyst (the real SDK talks to it), market data a fake
// Finnhub, and EDGAR the bundled sample (EDGAR_OFFLINE=true); online Claude without a FilingsSource offers no such tool.
import { randomUUID } from 'node:crypto';
import { offlineAnalyst } from '@fin/ai';
import { parseConfig } from '@fin/config';
import { AsyncJobResponse, NewsResult } from '@fin/contracts';
import { createPool, type Pool } from '@fin/db';
import { sampleFilingsSource } from '@fin/edgar';
import { createMemoryBus } from '@fin/events';
import { startFakeAnthropic, startFakeFinnhub, type FakeAnthropic, type FakeFinnhub } from '@fin/fakes';
import { createHandlerApp, identityKey, signIdentity } from '@fin/http';
import { createLogger } from '@fin/log';
import { createTestDatabase, testCustomerToolsKey, waitFor, type TestDatabase } from '@fin/testing';
import request from 'supertest';
import { newsConfigShape } from '../src/config';
import { newsService } from '../src/service';

const SECRET = 'n'.repeat(40);
const PATH = '/api/products/news';
const FINNHUB_TOKEN = 'finnhub-test-token';
const logger = createLogger({ service: 'news-filings-test', level: 'silent' });

describe('news service: the engine made from its config reads SEC filings', () => {
  let db: TestDatabase;
  let pool: Pool;
  let claude: FakeAnthropic;
  let finnhub: FakeFinnhub;
  let tenantId: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool({ connectionString: db.url, applicationName: 'news-filings-test', max: 5 });
    tenantId = (await pool.query<{ id: string }>("INSERT INTO tenants (name) VALUES ('f') RETURNING id")).rows[0]!.id;
    claude = await startFakeAnthropic({ handler: offlineAnalyst() });
    finnhub = await startFakeFinnhub({ token: FINNHUB_TOKEN });
  });
  afterAll(async () => {
    await Promise.all([claude?.close(), finnhub?.close(), pool?.end()]);
    await db?.drop();
  });

  it("offers sec_filings to the worker's runs, which cite the company's results 8-K from the bundled sample", async () => {
    const config = parseConfig(newsConfigShape, {
      DATABASE_URL: db.url,
      INTERNAL_SIGNING_SECRET: SECRET,
      KAFKA_BROKERS: '127.0.0.1:1',
      CUSTOMER_TOOLS_ENCRYPTION_KEY: testCustomerToolsKey(),
      ANTHROPIC_API_KEY: 'sk-ant-test-key-0000',
      ANTHROPIC_BASE_URL: claude.url,
      AI_MAX_RETRIES: '0',
      AI_WEB_SEARCH: 'false',
      FINNHUB_API_KEY: FINNHUB_TOKEN,
      FINNHUB_BASE_URL: finnhub.apiBaseUrl,
      EDGAR_OFFLINE: 'true',
      NEWS_ROLE: 'all',
      WORKER_POLL_INTERVAL_MS: '100',
      PORT: '0',
    });
    const bus = createMemoryBus({ logger });
    // No engine and no filings shared: the unit makes both from its config, as a process of its own does.
    const unit = await newsService.unit({ config, logger, units: new Map(), pool, bus });
    try {
      await unit.start();
      const body = JSON.stringify({ symbols: ['AAPL'], n: 3 });
      const signed = signIdentity(
        { requestId: randomUUID(), caller: { tenantId, keyId: randomUUID(), scopes: ['news'] } },
        identityKey(SECRET, 'news'),
        { method: 'POST', path: PATH, body },
      );
      const res = await request(createHandlerApp(unit, { logger, signingSecret: SECRET }))
        .post(PATH)
        .set(signed)
        .set('Content-Type', 'application/json')
        .send(body)
        .expect(202);
      const { job_id: jobId } = AsyncJobResponse.parse(res.body);
      const job = await waitFor(
        async () => {
          const { rows } = await pool.query<{ status: string; result: unknown; error: unknown }>(
            'SELECT status, result, error FROM jobs WHERE id = $1',
            [jobId],
          );
          return rows[0] && ['completed', 'failed'].includes(rows[0].status) && rows[0];
        },
        { timeoutMs: 30_000, what: 'the news job to finish' },
      );
      expect({ status: job.status, error: job.error }).toEqual({ status: 'completed', error: null });

      expect((claude.requests[0]?.body?.tools ?? []).map((tool) => tool.name)).toEqual(['market_data', 'sec_filings']);
      const cited = NewsResult.parse(job.result).news.flatMap((item) =>
        item.citations.filter((citation) => citation.source === 'sec_filing'),
      );
      expect(cited).toHaveLength(1);
      expect(cited[0]?.filing).toMatchObject({ form: '8-K', item: '2.02' });
      const section = (await sampleFilingsSource().document('AAPL', cited[0]!.filing!.accession))?.sections.find(
        (found) => found.item === '2.02',
      );
      expect(section?.text).toContain(cited[0]?.quote);
    } finally {
      for (const closer of unit.closers) await closer.close();
      await bus.close();
    }
  }, 60_000);
});
