// The job event stream on `npm start`'s single process (the in-process bus, the embedded PostgreSQL): a news job
// followed from its 202 to its result without polling.
import { AsyncJobResponse, JobResultEvent } from '@fin/contracts';
import { openEventStream } from '@fin/testing';
import { buildOnce, dataFolder, startNpmStart, type Launched } from './npm-start';

describe('the job event stream on npm start', () => {
  const data = dataFolder('fin-standalone-events');
  let running: Launched | undefined;
  beforeAll(buildOnce, 300_000);
  afterAll(async () => {
    await running?.forceStop();
    data.remove();
  });

  it('follows a news job from its 202 to its result, then answers a reconnect with the final id 204', async () => {
    const started = await startNpmStart(data.dir);
    running = started.running;
    const { apiKey, baseUrl: base } = started;
    const accepted = await fetch(`${base}/api/products/news`, {
      method: 'POST',
      headers: { 'X-API-Key': apiKey, 'Content-Type': 'application/json', 'Cache-Control': 'no-cache' },
      body: JSON.stringify({ symbols: ['MSFT'], n: 2 }),
    });
    expect(accepted.status).toBe(202);
    const job = AsyncJobResponse.parse(await accepted.json());
    const eventsUrl = `${base}${job.status_url.replace(/\/status$/, '/events')}`;

    const stream = await openEventStream(eventsUrl, { headers: { 'X-API-Key': apiKey } });
    expect(stream.status).toBe(200);
    const frames = await stream.rest();
    // The job may already have finished when the stream opens (offline news takes milliseconds): the stream then
    // holds its result alone; otherwise it opens with the job's status.
    expect(['status', 'result']).toContain(frames[0]?.event);
    expect(frames.filter((frame) => frame.event === 'result')).toHaveLength(1);
    expect(frames.at(-1)?.event).toBe('result');
    const ids = frames.map((frame) => Number(frame.id));
    expect(ids).toEqual([...new Set(ids)].sort((a, b) => a - b));
    const result = await fetch(`${base}${job.result_url}`, { headers: { 'X-API-Key': apiKey } });
    expect(JobResultEvent.parse(frames.at(-1)?.data)).toEqual(await result.json());

    const again = await openEventStream(eventsUrl, { headers: { 'X-API-Key': apiKey, 'Last-Event-ID': frames.at(-1)!.id! } });
    expect(again.status).toBe(204);

    running.child.kill('SIGTERM');
    expect(await running.exited).toBe(0);
  }, 120_000);
});
