// The SDK against `npm start`'s single process: the key the banner prints, a news request followed to its result,
// and a streamed chat reply continued in its conversation.
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort, waitFor } from '@fin/testing';
import { FinancialIntelligence } from '@financial-intelligence/sdk';
import { buildOnce, launchNpmStart, type Launched } from './npm-start';

describe('the SDK against npm start', () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'fin-standalone-sdk-'));
  // As root, PostgreSQL runs as the postgres user, which must be able to enter the folder (mkdtemp makes it 700).
  chmodSync(dataDir, 0o755);
  let running: Launched | undefined;
  beforeAll(buildOnce, 300_000);
  afterAll(async () => {
    await running?.forceStop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('creates news and follows it to its result, and streams a chat reply and its continuation', async () => {
    const port = await freePort();
    running = launchNpmStart({ DATA_DIR: dataDir, PORT: String(port) });
    await waitFor(() => running!.output().includes('Ctrl-C stops everything') || running!.child.exitCode !== null, {
      timeoutMs: 45_000,
      what: 'the banner',
    });
    const apiKey = /X-API-Key: (fin_\w+)/.exec(running.output())?.[1];
    expect(apiKey).toBeDefined();
    const client = new FinancialIntelligence({ apiKey: apiKey!, baseUrl: `http://127.0.0.1:${port}` });

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
