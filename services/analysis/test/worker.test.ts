import { offlineAnalyst, schemaForFields } from '@fin/ai';
import { AnalysisRequest, type AnalysisRequestInput } from '@fin/contracts';
import { createMemoryBus, createOutboxRelay, type MemoryEventBus, type OutboxRelay } from '@fin/events';
import { jsonReply, textReply } from '@fin/fakes';
import { submitJob, type JobWorker } from '@fin/job-kit';
import { waitFor } from '@fin/testing';
import { createAnalysisWorker } from '../src/worker';
import { createTestBed, logger, outboxOf, type OutboxEvent, type TestBed } from './support';

describe('analysis worker role', () => {
  let bed: TestBed;
  let bus: MemoryEventBus;
  let relay: OutboxRelay;
  let worker: JobWorker;

  beforeAll(async () => {
    // Unscripted requests are answered by the offline analyst, as a deterministic model.
    bed = await createTestBed({ handler: offlineAnalyst() });
    bus = createMemoryBus({ logger });
    relay = createOutboxRelay({ pool: bed.pool, bus, logger, pollIntervalMs: 50 });
    relay.start();
    worker = createAnalysisWorker({ pool: bed.pool, bus, engine: bed.engine, logger, timeLimitMs: 20_000, leaseMs: 5_000 });
    await worker.start();
  });
  afterEach(() => bed.fake.reset());
  afterAll(async () => {
    await worker.stop();
    await relay.stop();
    await bus.close();
    await bed.close();
  });

  /** Queues an analysis as the API role does and waits for the worker's final event. */
  async function run(input: AnalysisRequestInput, maxAttempts = 1): Promise<OutboxEvent['payload']> {
    const request = AnalysisRequest.parse(input);
    const { jobId } = await submitJob(bed.pool, { tenantId: bed.tenantA, jobType: 'analysis', request: { ...request }, maxAttempts });
    const final = await waitFor(
      async () =>
        (await outboxOf(bed.pool, jobId)).find((event) => event.payload.status === 'completed' || event.payload.status === 'failed'),
      { what: `job ${jobId} to finish` },
    );
    return final.payload;
  }

  it("answers json_schema with exactly the schema's fields, each of the type named", async () => {
    const schema = {
      summary: 'string',
      risk_score: 'number',
      holdings: 'integer',
      hedged: 'boolean',
      risks: 'array',
      exposure: 'object',
    } as const;
    const final = await run({
      prompt: 'How exposed is this portfolio to rising rates?',
      portfolio_composition: [
        { symbol: 'AAPL', percentage: 60 },
        { symbol: 'MSFT', percentage: 40 },
      ],
      output_format: { type: 'json_schema', schema },
    });
    expect(final.status).toBe('completed');
    const content = final.result?.content as Record<string, unknown>;
    expect(final.result?.format).toBe('json_schema');
    expect(Object.keys(content).sort()).toEqual(Object.keys(schema).sort());
    // Every field of the type named (the strict schema also refuses a missing or an extra field).
    expect(schemaForFields(schema).parse(content)).toEqual(content);
    expect(Array.isArray(content.exposure)).toBe(false);
  });

  it('repairs a model answer of the wrong shape', async () => {
    bed.fake.reply(
      jsonReply({ summary: 'Fine.', risk_score: 'low', extra: true }),
      jsonReply({ summary: 'Fine.', risk_score: 0.2, _citations: [] }),
    );
    const final = await run({
      prompt: 'Score it.',
      output_format: { type: 'json_schema', schema: { summary: 'string', risk_score: 'number' } },
    });
    expect(final).toMatchObject({ status: 'completed', result: { format: 'json_schema', content: { summary: 'Fine.', risk_score: 0.2 } } });
  });

  it('fails the job with a clear reason when the answer cannot be repaired', async () => {
    bed.fake.reply(textReply('Not JSON at all.'), textReply('Still not JSON.'));
    const final = await run({ prompt: 'Give me JSON.', output_format: { type: 'json' } });
    expect(final).toMatchObject({
      status: 'failed',
      error: { type: 'internal_error', detail: 'The AI model did not produce a valid result.' },
    });
  });

  it('answers markdown and json in their formats', async () => {
    const markdown = await run({ prompt: 'Outlook for NVDA?', symbols: ['NVDA'] });
    expect(markdown.result).toMatchObject({ format: 'markdown', content: expect.stringMatching(/^## Summary/) });
    const json = await run({ prompt: 'Outlook for NVDA?', symbols: ['NVDA'], output_format: { type: 'json' } });
    expect(json.result).toMatchObject({ format: 'json', content: expect.any(Object) });
  });
});
