// The analysis service as deployed on its own (no engine shared, as in Kubernetes or Compose): the engine it makes
// from its config is given SEC EDGAR, so its analyses are offered the sec_filings tool and quote a 10-K's risk
// factors; a FilingsSource the process shares (npm start) is the one read. Claude is a fake Messages API answered by
// the offline analyst (the real SDK talks to it), market data a fake Finnhub, EDGAR the bundled sample
// (EDGAR_OFFLINE=true); online Claude without a FilingsSource offers no such tool.
import { offlineAnalyst } from '@fin/ai';
import { AnalysisResponse, AnalysisResult } from '@fin/contracts';
import { sampleFilingsSource, type FilingsSource } from '@fin/edgar';
import { createMemoryBus } from '@fin/events';
import { startFakeFinnhub, type FakeFinnhub } from '@fin/fakes';
import { createHandlerApp } from '@fin/http';
import { waitFor } from '@fin/testing';
import request from 'supertest';
import { analysisService } from '../src/service';
import { analysisConfig, createTestBed, logger, PATH, signed, type TestBed } from './support';

const FINNHUB_TOKEN = 'finnhub-test-token';
const QUESTION = { prompt: 'What are the main risks of holding Apple?', symbols: ['AAPL'], output_format: { type: 'json' } };

describe('analysis service: the engine made from its config reads SEC filings', () => {
  let bed: TestBed;
  let finnhub: FakeFinnhub;

  beforeAll(async () => {
    bed = await createTestBed({ handler: offlineAnalyst() });
    finnhub = await startFakeFinnhub({ token: FINNHUB_TOKEN });
  });
  afterAll(async () => {
    await finnhub?.close();
    await bed?.close();
  });
  afterEach(() => bed.fake.reset());

  /** An analysis through the unit's own engine (none shared), API and worker in one unit, to its finished job row. */
  async function analyse(filings?: FilingsSource): Promise<{ status: string; result: unknown; error: unknown }> {
    const config = analysisConfig(bed, {
      ANTHROPIC_API_KEY: 'sk-ant-test-key-0000',
      ANTHROPIC_BASE_URL: bed.fake.url,
      AI_MAX_RETRIES: '0',
      AI_WEB_SEARCH: 'false',
      FINNHUB_API_KEY: FINNHUB_TOKEN,
      FINNHUB_BASE_URL: finnhub.apiBaseUrl,
      EDGAR_OFFLINE: 'true',
      ANALYSIS_ROLE: 'all',
      ANALYSIS_INLINE_WAIT_MS: '0',
      WORKER_POLL_INTERVAL_MS: '100',
    });
    const bus = createMemoryBus({ logger });
    const unit = await analysisService.unit({ config, logger, units: new Map(), pool: bed.pool, bus, ...(filings ? { filings } : {}) });
    try {
      await unit.start();
      const res = await request(createHandlerApp(unit, { logger, signingSecret: 'x'.repeat(40) }))
        .post(PATH)
        .set(signed(bed.tenantA, QUESTION))
        .set('Content-Type', 'application/json')
        .send(JSON.stringify(QUESTION))
        .expect(202);
      const { job_id: jobId } = AnalysisResponse.parse(res.body);
      return await waitFor(
        async () => {
          const { rows } = await bed.pool.query<{ status: string; result: unknown; error: unknown }>(
            'SELECT status, result, error FROM jobs WHERE id = $1',
            [jobId],
          );
          return rows[0] && ['completed', 'failed'].includes(rows[0].status) && rows[0];
        },
        { timeoutMs: 30_000, what: 'the analysis job to finish' },
      );
    } finally {
      for (const closer of unit.closers) await closer.close();
      await bus.close();
    }
  }

  it("offers sec_filings, and an analysis of a company's risks quotes its 10-K's Item 1A from the bundled sample", async () => {
    const job = await analyse();
    expect({ status: job.status, error: job.error }).toEqual({ status: 'completed', error: null });
    expect((bed.fake.requests[0]?.body?.tools ?? []).map((tool) => tool.name)).toEqual(['market_data', 'sec_filings']);
    const cited = AnalysisResult.parse(job.result).citations.filter((citation) => citation.source === 'sec_filing');
    expect(cited).toHaveLength(1);
    expect(cited[0]?.filing).toMatchObject({ form: '10-K', item: '1A' });
    const section = (await sampleFilingsSource().document('AAPL', cited[0]!.filing!.accession))?.sections.find(
      (found) => found.item === '1A',
    );
    expect(section?.text).toContain(cited[0]?.quote);
  }, 60_000);

  it('reads the FilingsSource the process shares, not one of its own', async () => {
    const sample = sampleFilingsSource();
    const reads: string[] = [];
    // The sample, recording each read: the engine's sec_filings calls go through the shared source.
    const shared = new Proxy(sample, {
      get(target, property, receiver) {
        const value: unknown = Reflect.get(target, property, receiver);
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          reads.push(String(property));
          return (value as (...params: unknown[]) => unknown).apply(target, args);
        };
      },
    });
    const job = await analyse(shared);
    expect(job.status).toBe('completed');
    expect(reads).toContain('document');
  }, 60_000);
});
