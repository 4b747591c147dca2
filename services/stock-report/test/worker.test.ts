import { randomUUID } from 'node:crypto';
import { AiError, offlineAnalyst } from '@fin/ai';
import { parseConfig } from '@fin/config';
import { AsyncJobResponse, StockReportResult } from '@fin/contracts';
import { createPool, type Pool } from '@fin/db';
import {
  errorReply,
  startFakeAnthropic,
  startFakeEdgar,
  startFakeFinnhub,
  briefText,
  systemText,
  toolResults,
  type FakeAnthropic,
  type FakeEdgar,
  type FakeFinnhub,
} from '@fin/fakes';
import { identityKey, serveDefinition, signIdentity, type RunningService } from '@fin/http';
import { classifyFailure } from '@fin/job-kit';
import { createLogger } from '@fin/log';
import { createTestDatabase, TEST_KAFKA_BROKERS, testCustomerToolsKey, uniqueName, waitFor, type TestDatabase } from '@fin/testing';
import request from 'supertest';
import { stockReportConfigShape } from '../src/config';
import { stockReportService } from '../src/service';

const SECRET = 's'.repeat(40);
const PATH = '/api/products/stock-report';
const FINNHUB_TOKEN = 'finnhub-test-token';

interface JobEvent {
  status: string;
  progress: number;
  currently_working_on: string;
  result?: Record<string, unknown>;
  error?: { type: string; detail: string };
}

/**
 * The service as deployed with STOCK_REPORT_ROLE=all: the API takes the request, the outbox relay publishes it to
 * the test Kafka broker, the worker consumes it and runs it on the real AI engine, whose SDK talks to a fake
 * Messages API answered like the model would (market_data tool calls, then the report), over fake Finnhub.
 */
describe('stock-report service: API and worker over Kafka', () => {
  let db: TestDatabase;
  let pool: Pool;
  let claude: FakeAnthropic;
  let finnhub: FakeFinnhub;
  let edgar: FakeEdgar;
  let service: RunningService;
  let tenantId: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool({ connectionString: db.url, applicationName: 'stock-report-worker-test', max: 3 });
    tenantId = (await pool.query<{ id: string }>("INSERT INTO tenants (name) VALUES ('w') RETURNING id")).rows[0]!.id;
    claude = await startFakeAnthropic({ handler: offlineAnalyst() });
    finnhub = await startFakeFinnhub({ token: FINNHUB_TOKEN });
    edgar = await startFakeEdgar();
    const config = parseConfig(stockReportConfigShape, {
      DATABASE_URL: db.url,
      INTERNAL_SIGNING_SECRET: SECRET,
      KAFKA_BROKERS: TEST_KAFKA_BROKERS.join(','),
      KAFKA_TOPIC_PREFIX: `${uniqueName('stock-report')}.`,
      ANTHROPIC_API_KEY: 'sk-ant-test-key-0000',
      CUSTOMER_TOOLS_ENCRYPTION_KEY: testCustomerToolsKey(),
      ANTHROPIC_BASE_URL: claude.url,
      AI_MAX_RETRIES: '0',
      AI_WEB_SEARCH: 'false',
      FINNHUB_API_KEY: FINNHUB_TOKEN,
      FINNHUB_BASE_URL: finnhub.apiBaseUrl,
      // Reports take their figures from SEC EDGAR (a fake at its paths), as deployed.
      EDGAR_OFFLINE: 'false',
      EDGAR_USER_AGENT: 'Stock Report Test Ltd ops@example.com',
      EDGAR_BASE_URL: edgar.url,
      EDGAR_DATA_URL: edgar.url,
      PORT: '0',
    });
    service = await serveDefinition(stockReportService, {
      config,
      logger: createLogger({ service: 'stock-report-test', level: 'silent' }),
    });
  }, 60_000);

  afterAll(async () => {
    await new Promise((resolve) => service?.server?.close(resolve));
    for (const closer of service?.closers ?? []) await closer.close();
    await Promise.all([claude?.close(), finnhub?.close(), edgar?.close(), pool?.end()]);
    await db?.drop();
  });

  function post(body: unknown) {
    const signed = signIdentity(
      { requestId: randomUUID(), caller: { tenantId, keyId: randomUUID(), scopes: ['stock-report'] } },
      identityKey(SECRET, 'stock-report'),
      { method: 'POST', path: PATH, body: typeof body === 'string' ? body : JSON.stringify(body) },
    );
    return request(service.server!)
      .post(PATH)
      .set(signed)
      .send(body as object);
  }

  async function events(jobId: string): Promise<JobEvent[]> {
    const { rows } = await pool.query<{ envelope: { payload: JobEvent } }>(
      "SELECT envelope FROM outbox WHERE message_key = $1 AND topic = 'jobs.events' ORDER BY id",
      [jobId],
    );
    return rows.map((row) => row.envelope.payload);
  }

  async function finalEvent(jobId: string): Promise<JobEvent> {
    return waitFor(async () => (await events(jobId)).find((event) => event.status === 'completed' || event.status === 'failed'), {
      timeoutMs: 45_000,
      what: `job ${jobId} to finish`,
    });
  }

  /** The request bodies of the model calls whose brief (system prompt and the request's own first turn) mentions `marker`. */
  const callsFor = (marker: string) => claude.requests.flatMap(({ body }) => (body && briefText(body).includes(marker) ? [body] : []));

  it('compares two companies: the model gets both, the comparison instruction and the data; the result is a spec-valid comparison', async () => {
    const data = { recent_earnings: { NVDA: 'Q3 revenue 35.1bn USD, up 94% year on year' } };
    const res = await post({ symbols: ['nvda', 'msft'], data }).expect(202);
    const { job_id: jobId } = AsyncJobResponse.parse(res.body);
    const final = await finalEvent(jobId);

    const calls = callsFor('Q3 revenue 35.1bn USD');
    expect(calls.length).toBeGreaterThanOrEqual(2);
    const brief = briefText(calls[0]!);
    expect(brief).toContain('Compare NVDA with MSFT.');
    expect(brief).toContain('A comparison is not two separate reports: every insight must set the first company against the second');
    expect(brief).toContain('Each quick insight must compare the two.');
    expect(brief).toMatch(/<client_data>[\s\S]*up 94% year on year[\s\S]*<\/client_data>/);
    // The request's own part is the first user turn; the system prompt is every report's.
    expect(systemText(calls[0]!)).not.toContain('NVDA');
    // The model looked both companies up through market_data, which reached (fake) Finnhub for each.
    const looked = toolResults(calls.at(-1)!)
      .map((result) => result.text)
      .join('\n');
    expect(looked).toMatch(/"symbol":\s*"NVDA"/);
    expect(looked).toMatch(/"symbol":\s*"MSFT"/);
    expect(new Set(finnhub.requests.map((call) => call.query.symbol))).toEqual(new Set(['NVDA', 'MSFT']));

    expect(final.status).toBe('completed');
    const report = StockReportResult.parse(final.result);
    expect(report.meta).toMatchObject({ prompt_version: 'stock-report@4', offline: false });
    expect(new Set(report.detailed_analysis.map((item) => item.category)).size).toBeGreaterThanOrEqual(3);
    for (const item of report.detailed_analysis) expect(item.keyMetric).toMatch(/NVDA .* vs MSFT /);
    for (const insight of report.quick_insights) expect(insight).toMatch(/NVDA[\s\S]*MSFT|MSFT[\s\S]*NVDA/);
    expect(JSON.stringify(report)).toContain("The client's data (recent_earnings) was weighed for both NVDA and MSFT.");
    // Both companies' reported figures came from EDGAR's company facts, were given to the model, and are in the result
    // with their filings; insights stating them cite those filings.
    expect(brief).toMatch(/<sec_figures symbol="NVDA" company="[^"]+" cik="0001045810">/);
    expect(brief).toMatch(/<sec_figures symbol="MSFT" company="[^"]+" cik="0000789019">/);
    expect(
      edgar.requests
        .filter((call) => call.path.startsWith('/api/xbrl/companyfacts/'))
        .map((call) => call.path)
        .sort(),
    ).toEqual(['/api/xbrl/companyfacts/CIK0000789019.json', '/api/xbrl/companyfacts/CIK0001045810.json']);
    expect(edgar.requests.every((call) => call.headers['user-agent'] === 'Stock Report Test Ltd ops@example.com')).toBe(true);
    expect(new Set(report.figures.map((figure) => figure.symbol))).toEqual(new Set(['NVDA', 'MSFT']));
    for (const figure of report.figures) expect(figure.accession).toMatch(/^\d{10}-\d{2}-\d{6}$/);
    const cited = report.detailed_analysis.flatMap((item) => item.citations).filter((citation) => citation.source === 'sec_filing');
    expect(cited.length).toBeGreaterThan(0);
    for (const citation of cited) expect(report.figures.map((figure) => figure.accession)).toContain(citation.filing?.accession);
  });

  it('analyses a single company without asking for a comparison', async () => {
    const { job_id: jobId } = AsyncJobResponse.parse((await post({ symbols: ['AMZN'], language: 'de' }).expect(202)).body);
    const final = await finalEvent(jobId);
    expect(final.status).toBe('completed');
    const brief = briefText(callsFor('Analyse AMZN.')[0]!);
    expect(brief).not.toContain('Compare');
    expect(brief).toContain('"de"');
    expect(StockReportResult.parse(final.result).detailed_analysis[0]!.title).toContain('Amazon');
  });

  it('fails a job whose request the model API refused as model_request_rejected, with no internals', async () => {
    claude.reply(errorReply('invalid_request_error', { message: 'internal detail: messages.0 malformed' }));
    const { job_id: jobId } = AsyncJobResponse.parse((await post({ symbols: ['GOOGL'] }).expect(202)).body);
    const final = await finalEvent(jobId);
    expect(final).toMatchObject({ status: 'failed', error: { type: 'model_request_rejected' } });
    expect(JSON.stringify(final)).not.toContain('internal detail');
  });

  it('fails a job the model refused to answer (stop_reason refusal) as model_refused, not retried', async () => {
    claude.reply({ content: [], stopReason: 'refusal' });
    const { job_id: jobId } = AsyncJobResponse.parse((await post({ symbols: ['NFLX'] }).expect(202)).body);
    const final = await finalEvent(jobId);
    expect(final).toMatchObject({ status: 'failed', error: { type: 'model_refused' } });
    expect(claude.pendingReplies).toBe(0);
  });
});

describe('classifyFailure on the AI engine errors', () => {
  it.each([
    ['overloaded', true, 'service_unavailable'],
    ['rate_limited', true, 'service_unavailable'],
    ['timeout', true, 'service_unavailable'],
    ['invalid_output', true, 'internal_error'],
    ['limit_exceeded', false, 'internal_error'],
    ['refused', false, 'model_refused'],
    ['auth', false, 'internal_error'],
    ['bad_request', false, 'model_request_rejected'],
  ] as const)('an AiError of kind %s: retry %s, reported as %s', (kind, retry, type) => {
    expect(classifyFailure(new AiError(kind, 'detail the client never sees'))).toMatchObject({ retry, type });
    expect(classifyFailure(new AiError(kind, 'detail the client never sees')).detail).not.toContain('never sees');
  });

  it('retries an error of our own', () => {
    expect(classifyFailure(new Error('connection reset'))).toMatchObject({ retry: true, type: 'internal_error' });
  });
});
