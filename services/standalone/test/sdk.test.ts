// The SDK against `npm start`'s single process: the key the banner prints, a news request followed to its result,
// and a streamed chat reply continued in its conversation.
import { FinancialIntelligence } from '@financial-intelligence/sdk';
import { buildOnce, dataFolder, startNpmStart, type Launched } from './npm-start';

describe('the SDK against npm start', () => {
  const data = dataFolder('fin-standalone-sdk');
  let running: Launched | undefined;
  beforeAll(buildOnce, 300_000);
  afterAll(async () => {
    await running?.forceStop();
    data.remove();
  });

  it('creates news and follows it to its result, and streams a chat reply and its continuation', async () => {
    const started = await startNpmStart(data.dir);
    running = started.running;
    const client = new FinancialIntelligence({ apiKey: started.apiKey, baseUrl: started.baseUrl });

    const handle = client.news.create({ symbols: ['AAPL'], n: 2 });
    expect((await handle.response).status).toBe(202);
    const result = await handle.result();
    expect(result.news.length).toBeGreaterThan(0);
    await expect(client.jobs.status('news', await handle.jobId())).resolves.toMatchObject({ status: 'completed' });

    const stream = client.chat.stream({ message: 'What is the P/E of AAPL?' });
    const names: string[] = [];
    for await (const event of stream) names.push(event.event);
    expect(names.at(-1)).toBe('done');
    expect(names).toContain('token');
    const next = await client.chat.stream({ message: 'And MSFT?', conversation_id: stream.conversationId }).finalReply();
    expect(next.conversation_id).toBe(stream.conversationId);
    expect(next.text.length).toBeGreaterThan(0);
  });
});
