import { offlineAnalyst, schemaForFields } from '@fin/ai';
import {
  AnalysisDoneEvent,
  AnalysisResponse,
  AnalysisResult,
  AnalysisSynthesisChunkEvent,
  ErrorBody,
  JobResultResponse,
  JobStatusResponse,
  analysisText,
} from '@fin/contracts';
import { startFakeAnthropic, startFakeFinnhub, type FakeAnthropic, type FakeFinnhub } from '@fin/fakes';
import { createTestDatabase, type TestDatabase } from '@fin/testing';
import { UPSTREAM_MODES, sharedEnv, startSystem, type System } from '../src/system';

interface Frame {
  event?: string;
  data?: unknown;
}

/** Reads an SSE body to its end, frame by frame. */
async function framesOf(res: Response): Promise<Frame[]> {
  const frames: Frame[] = [];
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const bytes of res.body! as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(bytes, { stream: true });
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const frame: Frame = {};
      for (const line of buffer.slice(0, end).split('\n')) {
        if (line.startsWith('event: ')) frame.event = line.slice(7);
        else if (line.startsWith('data: ')) frame.data = JSON.parse(line.slice(6)) as unknown;
      }
      buffer = buffer.slice(end + 2);
      frames.push(frame);
    }
  }
  return frames;
}

/**
 * Custom analysis through the whole system: gateway → analysis API → (queued: outbox → Kafka → analysis worker |
 * streamed: run in the API process) → job events on Kafka → jobs service → client, every service a process.
 */
describe.each(UPSTREAM_MODES)('custom analysis through the whole system (%s upstream)', (upstream) => {
  let db: TestDatabase;
  let claude: FakeAnthropic;
  let finnhub: FakeFinnhub;
  let system: System;
  let keyA: string;
  let keyB: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    claude = await startFakeAnthropic({ handler: offlineAnalyst() });
    finnhub = await startFakeFinnhub({ token: 'finnhub-e2e-token' });
    const env = sharedEnv({
      databaseUrl: db.url,
      anthropicUrl: claude.url,
      finnhubUrl: finnhub.apiBaseUrl,
      finnhubToken: 'finnhub-e2e-token',
    });
    system = await startSystem(env, {}, { products: ['analysis'], upstream });
    keyA = system.tenantKey('acme');
    keyB = system.tenantKey('globex');
  }, 120_000);

  afterAll(async () => {
    await system?.stop();
    await Promise.all([claude?.close(), finnhub?.close()]);
    await db?.drop();
  });

  function api(path: string, { key = keyA, body }: { key?: string; body?: unknown } = {}) {
    return fetch(`${system.gatewayUrl}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { 'Content-Type': 'application/json', 'X-API-Key': key },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  }

  async function resultAt(resultUrl: string, key = keyA): Promise<AnalysisResult> {
    const res = await api(resultUrl, { key });
    expect(res.status).toBe(200);
    return AnalysisResult.parse(JobResultResponse.parse(await res.json()).result);
  }

  it("answers a json_schema analysis inline with exactly the schema's fields and types", async () => {
    const schema = { summary: 'string', risk_score: 'number', holdings: 'integer', hedged: 'boolean', risks: 'array' } as const;
    const res = await api('/api/analysis', {
      body: {
        prompt: 'How exposed is this portfolio to rising interest rates?',
        portfolio_composition: [
          { symbol: 'AAPL', percentage: 60 },
          { symbol: 'MSFT', percentage: 40 },
        ],
        output_format: { type: 'json_schema', schema },
      },
    });
    // The worker ran it, the jobs service recorded it, and the waiting request was woken: done within the wait.
    expect(res.status).toBe(200);
    const answer = AnalysisResponse.parse(await res.json());
    if (answer.status !== 'completed' || answer.result.format !== 'json_schema')
      throw new Error(`expected a completed json_schema analysis, got ${JSON.stringify(answer)}`);
    const content = answer.result.content;
    expect(Object.keys(content).sort()).toEqual(Object.keys(schema).sort());
    // Every field of the type named (the strict schema also refuses a missing or an extra field).
    expect(schemaForFields(schema).parse(content)).toEqual(content);
    expect(await resultAt(answer.result_url)).toEqual(answer.result);
  });

  it('streams several synthesis_chunk events before done, and the result URL then serves the same text', async () => {
    const res = await api('/api/analysis', {
      body: { prompt: 'Is Microsoft a defensive holding?', symbols: ['MSFT'], output_format: { type: 'markdown', stream: true } },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const statusUrl = res.headers.get('location')!;
    expect(statusUrl).toMatch(/^\/api\/jobs\/analysis\/[0-9a-f-]{36}\/status$/);

    const frames = await framesOf(res);
    const chunks = frames
      .filter((frame) => frame.event === 'synthesis_chunk')
      .map((frame) => AnalysisSynthesisChunkEvent.parse(frame.data).chunk);
    expect(chunks.length).toBeGreaterThan(3);
    const named = frames.filter((frame) => frame.event !== undefined);
    expect(named.slice(0, -1).every((frame) => frame.event === 'synthesis_chunk')).toBe(true);
    const done = AnalysisDoneEvent.parse(named.at(-1)?.data);
    expect(named.at(-1)?.event).toBe('done');
    expect(statusUrl).toBe(`/api/jobs/analysis/${done.job_id}/status`);

    // `done` waits until the job-status service has the result, so it is there at once.
    const status = JobStatusResponse.parse(await (await api(statusUrl)).json());
    expect(status).toMatchObject({ status: 'completed', progress: 100 });
    const result = await resultAt(`/api/jobs/analysis/${done.job_id}/result`);
    expect(result.format).toBe('markdown');
    expect(result.content).toBe(chunks.join(''));
    expect(analysisText(result)).toBe(chunks.join(''));
  });

  it.each([
    [{ prompt: '   ' }, 'prompt'],
    [{ prompt: 'p', output_format: { type: 'yaml' } }, 'output_format.type'],
    [{ prompt: 'p', output_format: { type: 'json_schema', schema: { score: 'decimal' } } }, 'output_format.schema.score'],
    [
      {
        prompt: 'p',
        portfolio_composition: [
          { symbol: 'AAPL', percentage: -10 },
          { symbol: 'MSFT', percentage: 110 },
        ],
      },
      'portfolio_composition[0].percentage',
    ],
    [{ prompt: '', output_format: { stream: true } }, 'prompt'],
  ])('rejects %j with a 400 validation_error naming %s', async (body, field) => {
    const res = await api('/api/analysis', { body });
    expect(res.status).toBe(400);
    const error = ErrorBody.parse(await res.json());
    expect(error.type).toBe('validation_error');
    expect(error.detail).toContain(field);
  });

  it("answers another tenant's analysis job exactly as a job that does not exist", async () => {
    const res = await api('/api/analysis', { body: { prompt: 'Private question about NVDA.', symbols: ['NVDA'] } });
    const answer = AnalysisResponse.parse(await res.json());
    const missing = '/api/jobs/analysis/3fa85f64-5717-4562-b3fc-2c963f66afa6';
    const unknown = await (await api(`${missing}/status`, { key: keyB })).text();
    for (const url of [answer.status_url, answer.result_url]) {
      const theirs = await api(url, { key: keyB });
      expect(theirs.status).toBe(404);
      expect(await theirs.text()).toBe(unknown);
    }
    // The owner still sees it.
    expect((await api(answer.status_url)).status).toBe(200);
  });
});
