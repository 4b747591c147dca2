// The SDK (@financial-intelligence/sdk) against the whole system through the gateway, every service a process of
// its own: each product from request to result, the streams as async iterators, customer tools, the typed errors
// of real answers, and a real 429 of the gateway that the SDK waits out (until X-RateLimit-Reset) and retries.
import { randomUUID } from 'node:crypto';
import { offlineAnalyst } from '@fin/ai';
import { accountCounterKey } from '@fin/api-keys';
import { startFakeAnthropic, startFakeFinnhub, type FakeAnthropic, type FakeFinnhub } from '@fin/fakes';
import { createTestDatabase, type TestDatabase } from '@fin/testing';
import {
  AuthenticationError,
  FinancialIntelligence,
  NotFoundError,
  PermissionDeniedError,
  ValidationError,
  type ChatEvent,
  type Fetch,
} from '@financial-intelligence/sdk';
import pg from 'pg';
import { sharedEnv, startSystem, type System } from '../src/system';

describe('the SDK against the whole system', () => {
  let db: TestDatabase;
  let claude: FakeAnthropic;
  let finnhub: FakeFinnhub;
  let env: Record<string, string>;
  let system: System;
  let key: string;
  let client: FinancialIntelligence;

  beforeAll(async () => {
    db = await createTestDatabase();
    claude = await startFakeAnthropic({ handler: offlineAnalyst() });
    finnhub = await startFakeFinnhub({ token: 'finnhub-e2e-token' });
    env = sharedEnv({ databaseUrl: db.url, anthropicUrl: claude.url, finnhubUrl: finnhub.apiBaseUrl, finnhubToken: 'finnhub-e2e-token' });
  });

  afterAll(async () => {
    await Promise.all([claude?.close(), finnhub?.close()]);
    await db?.drop();
  });

  // Two systems one after the other (jobs products and tools, then analysis and chat), each lighter to start than
  // one with every service.
  async function start(products: Parameters<typeof startSystem>[2], tenant: string): Promise<void> {
    system = await startSystem(env, {}, products);
    key = system.tenantKey(tenant);
    client = new FinancialIntelligence({ apiKey: key, baseUrl: system.gatewayUrl });
  }

  describe('news, stock report, jobs, customer tools, errors and limits', () => {
    beforeAll(() => start({ products: ['news', 'stock-report', 'portal'] }, 'acme'), 180_000);
    afterAll(() => system?.stop());

    it('news: create().result() follows the job to its result; the same request again is a cache hit answered at once', async () => {
      const progress: number[] = [];
      const first = client.news.create({ symbols: ['AAPL', 'MSFT'], n: 3 });
      expect((await first.response).status).toBe(202);
      const result = await first.result({ onProgress: (status) => progress.push(status.progress) });
      expect(result.news.length).toBeGreaterThan(0);
      expect(result.news[0]).toMatchObject({ title: expect.any(String), sources: expect.any(Array) });
      expect(progress.length).toBeGreaterThan(0);

      const again = client.news.create({ symbols: ['AAPL', 'MSFT'], n: 3 });
      const cached = await again.response;
      expect(cached.status).toBe(200);
      expect(await again.result()).toEqual(result);
      // The job stays readable at the job routes.
      const jobId = await first.jobId();
      await expect(client.jobs.status('news', jobId)).resolves.toMatchObject({ status: 'completed', progress: 100 });
      await expect(client.jobs.result('news', jobId)).resolves.toMatchObject({ job_id: jobId, result: { news: result.news } });
    });

    it('stock report: a comparison of two symbols, and its finished job replayed by jobs.events', async () => {
      const handle = client.stockReport.create({ symbols: ['NVDA', 'AMD'] });
      const report = await handle.result();
      expect(report.detailed_analysis.length).toBeGreaterThan(0);
      expect(report.quick_insights.length).toBeGreaterThan(0);
      const events = [];
      for await (const event of client.jobs.events('stock-report', await handle.jobId())) events.push(event);
      expect(events.at(-1)).toMatchObject({
        event: 'result',
        data: { status: 'completed', result: { quick_insights: report.quick_insights } },
      });
    });

    it('customer tools: create, get, update, list, calls and delete', async () => {
      const created = await client.customerTools.create({
        name: 'get_positions',
        description: 'The positions of the customer portfolio.',
        endpoint: 'https://tools.example.com/positions',
        input_schema: { type: 'object', properties: { account: { type: 'string' } } },
        headers: { Authorization: 'Bearer secret-value' },
      });
      expect(created).toMatchObject({ name: 'get_positions', header_names: ['Authorization'], enabled: true });
      expect(JSON.stringify(created)).not.toContain('secret-value');
      await expect(client.customerTools.get(created.id)).resolves.toMatchObject({ id: created.id });
      const updated = await client.customerTools.update(created.id, {
        name: 'get_positions',
        description: 'Positions, by account.',
        endpoint: 'https://tools.example.com/positions',
        input_schema: { type: 'object' },
        enabled: false,
      });
      expect(updated).toMatchObject({ description: 'Positions, by account.', enabled: false, header_names: ['Authorization'] });
      expect((await client.customerTools.list()).tools.map((tool) => tool.id)).toContain(created.id);
      await expect(client.customerTools.calls(created.id, { limit: 5 })).resolves.toEqual({ calls: [] });
      await client.customerTools.delete(created.id);
      await expect(client.customerTools.get(created.id)).rejects.toBeInstanceOf(NotFoundError);
    });

    it('webhooks: create (its secret shown once), get, update, list, rotate the secret, deliveries and delete', async () => {
      const created = await client.webhooks.create({
        url: 'https://hooks.example.com/fin',
        events: ['job.completed'],
        description: 'orders',
      });
      expect(created).toMatchObject({
        url: 'https://hooks.example.com/fin',
        events: ['job.completed'],
        enabled: true,
        secret: expect.any(String),
      });
      const fetched = await client.webhooks.get(created.id);
      expect(fetched).toMatchObject({ id: created.id, description: 'orders' });
      expect(fetched).not.toHaveProperty('secret');
      const updated = await client.webhooks.update(created.id, {
        url: 'https://hooks.example.com/fin2',
        events: ['job.completed', 'job.failed'],
      });
      expect(updated).toMatchObject({ url: 'https://hooks.example.com/fin2', events: ['job.completed', 'job.failed'] });
      expect((await client.webhooks.list()).webhooks.map((webhook) => webhook.id)).toContain(created.id);
      const rotated = await client.webhooks.rotateSecret(created.id);
      expect(rotated.secret).not.toBe(created.secret);
      await expect(client.webhooks.deliveries(created.id)).resolves.toEqual({ deliveries: [] });
      await client.webhooks.delete(created.id);
      await expect(client.webhooks.get(created.id)).rejects.toBeInstanceOf(NotFoundError);
      const invalid = await client.webhooks.create({ url: 'http://hooks.example.com/plain' }).catch((error: unknown) => error);
      expect(invalid).toBeInstanceOf(ValidationError);
      expect((invalid as ValidationError).detail).toContain('url');
    });

    it('throws the typed errors of real answers: 401, 403, 404 and 400 with their bodies and request ids', async () => {
      const stranger = new FinancialIntelligence({ apiKey: 'fin_not_a_key', baseUrl: system.gatewayUrl });
      const unauthorized = await stranger.customerTools.list().catch((error: unknown) => error);
      expect(unauthorized).toBeInstanceOf(AuthenticationError);
      expect(unauthorized).toMatchObject({ status: 401, body: { status_code: 401, type: 'unauthorized', detail: 'Invalid API key.' } });
      expect((unauthorized as AuthenticationError).requestId).toEqual(expect.any(String));

      const chatOnly = (
        JSON.parse(system.admin(['keys', 'create', '--tenant', 'acme', '--scopes', 'chat', '--json'])) as { api_key: string }
      ).api_key;
      const limited = new FinancialIntelligence({ apiKey: chatOnly, baseUrl: system.gatewayUrl });
      const forbidden = await limited.news
        .create({ symbols: ['AAPL'] })
        .result()
        .catch((error: unknown) => error);
      expect(forbidden).toBeInstanceOf(PermissionDeniedError);
      expect(forbidden).toMatchObject({ status: 403, type: 'forbidden', detail: expect.stringContaining('news') });

      await expect(client.jobs.status('news', randomUUID())).rejects.toMatchObject({
        constructor: NotFoundError,
        status: 404,
        type: 'not_found',
      });

      const invalid = await client.news
        .create({ symbols: [], n: 50 })
        .result()
        .catch((error: unknown) => error);
      expect(invalid).toBeInstanceOf(ValidationError);
      expect((invalid as ValidationError).detail).toMatch(/symbols: .*n: must be at most 20|n: must be at most 20.*symbols/s);
    });

    it('waits out a real 429 of the gateway until X-RateLimit-Reset, then retries and succeeds', async () => {
      system.admin(['tenants', 'create', 'tight']);
      system.admin(['limits', 'set', '--tenant', 'tight', '--product', 'stock-report', '--per-minute', '1']);
      const tightKey = (JSON.parse(system.admin(['keys', 'create', '--tenant', 'tight', '--json'])) as { api_key: string }).api_key;
      const answers: { status: number; at: number; reset: string | null; key: string | null }[] = [];
      const recording: Fetch = async (input, init) => {
        const response = await fetch(input, init);
        answers.push({
          status: response.status,
          at: Date.now(),
          reset: response.headers.get('x-ratelimit-reset'),
          key: new Headers(init.headers).get('idempotency-key'),
        });
        return response;
      };
      const tight = new FinancialIntelligence({ apiKey: tightKey, baseUrl: system.gatewayUrl, fetch: recording, maxRetryDelayMs: 70_000 });
      await tight.stockReport.create({ symbols: ['IBM'] });
      // The account's minute is taken to its last seconds (the counter row every gateway replica shares), so the
      // SDK's wait is seconds rather than a minute; the gateway still refuses until then and names the time.
      const pool = new pg.Pool({ connectionString: db.url, max: 1 });
      try {
        const { rows } = await pool.query<{ id: string }>("SELECT id FROM tenants WHERE name = 'tight'");
        const window = await pool.query<{ hits: number }>(
          `UPDATE rate_limit_counters SET reset_at = now() + interval '5 seconds'
            WHERE counter_key = $1 AND reset_at > now() + interval '5 seconds' RETURNING hits`,
          [accountCounterKey('stock-report', rows[0]!.id)],
        );
        expect(window.rows).toEqual([{ hits: 1 }]);
      } finally {
        await pool.end();
      }
      const second = await tight.stockReport.create({ symbols: ['ORCL'] }).response;
      expect(second.status).toBe(202);
      const posts = answers.filter((answer) => answer.key !== null);
      expect(posts.map((answer) => answer.status)).toEqual([202, 429, 202]);
      const refused = posts[1]!;
      expect(Number(refused.reset)).toBeGreaterThan(refused.at / 1000);
      expect(posts[2]!.at).toBeGreaterThanOrEqual(Number(refused.reset) * 1000);
      // The retry repeated the request: the same Idempotency-Key.
      expect(posts[2]!.key).toBe(refused.key);
    }, 120_000);
  });

  describe('analysis, chat and MCP', () => {
    beforeAll(() => start({ products: ['analysis', 'chat', 'mcp'] }, 'acme-research'), 180_000);
    afterAll(() => system?.stop());

    it('analysis: the 200 answer with the result inline, and the stream whose chunks make the stored result', async () => {
      const handle = client.analysis.create({ prompt: 'Is AAPL expensive compared with MSFT?', symbols: ['AAPL', 'MSFT'] });
      const answer = await handle.response;
      expect(answer.status).toBe(200);
      const result = await handle.result();
      expect(result).toMatchObject({ format: 'markdown', content: expect.stringMatching(/\S/) });

      const stream = client.analysis.stream({ prompt: 'Summarise the risks of holding TSLA.', symbols: ['TSLA'] });
      const job = await stream.job();
      expect(job?.jobType).toBe('analysis');
      const { job_id: jobId, text } = await stream.finalText();
      expect(jobId).toBe(job?.jobId);
      expect(text.length).toBeGreaterThan(0);
      const stored = await client.jobs.result('analysis', jobId);
      expect(stored.result).toMatchObject({ format: 'markdown', content: text });
    });

    it('chat: iterates the typed events of a reply, continues the conversation, and sends one without streaming', async () => {
      const stream = client.chat.stream({ message: 'How is AAPL valued?' });
      const events: ChatEvent[] = [];
      for await (const event of stream) events.push(event);
      const names = events.map((event) => event.event);
      expect(names[0]).toBe('node_start');
      expect(names.at(-1)).toBe('done');
      expect(names).toContain('token');
      expect(events.every((event) => event.id !== undefined)).toBe(true);
      const conversationId = stream.conversationId!;
      expect(conversationId).toMatch(/^[0-9a-f-]{36}$/);

      const next = await client.chat.stream({ message: 'And MSFT?', conversation_id: conversationId }).finalReply();
      expect(next.conversation_id).toBe(conversationId);
      expect(next.text.length).toBeGreaterThan(0);

      const sent = await client.chat.send({ message: 'Thanks, one line summary please.', conversation_id: conversationId });
      expect(sent.conversation_id).toBe(conversationId);
      expect(sent.response.length).toBeGreaterThan(0);

      // The finished reply replays from its start when re-attached with the id of its first event.
      const replay = [];
      for await (const event of client.chat.attach({ lastEventId: events[0]!.id! })) replay.push(event);
      expect(replay.map((event) => event.id)).toEqual(events.slice(1).map((event) => event.id));
    });

    it('chat: a reply whose connection breaks mid-stream is re-attached with Last-Event-ID and read to its end, every event once', async () => {
      // The connection of the POST is cut by the client side of the wire after the chunk with the first event.
      const requests: string[] = [];
      let cut = false;
      const cutting: Fetch = async (input, init) => {
        requests.push(`${init.method} ${new URL(input).pathname} ${new Headers(init.headers).get('last-event-id') ?? ''}`.trim());
        const response = await fetch(input, init);
        if (cut || init.method !== 'POST' || response.body === null) return response;
        cut = true;
        const reader = (response.body as ReadableStream<Uint8Array>).getReader();
        const decoder = new TextDecoder();
        let seenSoFar = '';
        let broken = false;
        const body = new ReadableStream<Uint8Array>({
          async pull(controller) {
            if (broken) {
              await reader.cancel();
              controller.error(new TypeError('terminated'));
              return;
            }
            const chunk = await reader.read();
            if (chunk.done) {
              controller.close();
              return;
            }
            seenSoFar += decoder.decode(chunk.value, { stream: true });
            broken = /^id: /m.test(seenSoFar);
            controller.enqueue(chunk.value);
          },
        });
        return new Response(body, { status: response.status, headers: response.headers });
      };
      const flaky = new FinancialIntelligence({ apiKey: key, baseUrl: system.gatewayUrl, fetch: cutting });
      const stream = flaky.chat.stream({ message: 'Walk me through the valuation of NVDA.' });
      const events: ChatEvent[] = [];
      for await (const event of stream) events.push(event);
      expect(events.at(-1)?.event).toBe('done');
      expect(requests[0]).toBe('POST /api/chat');
      expect(requests[1]).toMatch(/^GET \/api\/chat\/stream \S+:\d+$/);
      const ids = events.map((event) => event.id);
      expect(new Set(ids).size).toBe(ids.length);
      // The same events as the stored reply, replayed from its start.
      const replayed = [];
      for await (const event of client.chat.attach({ conversation_id: stream.conversationId })) replayed.push(event);
      expect(replayed.map((event) => event.id)).toEqual(ids);
      expect(replayed.map((event) => event.data)).toEqual(events.map((event) => event.data));
    });

    it('mcp: JSON-RPC messages to POST /mcp answered through the SDK; GET /mcp is a 405', async () => {
      const answers = async (message: Parameters<FinancialIntelligence['mcp']['send']>[0]) => {
        const messages: Record<string, unknown>[] = [];
        for await (const event of client.mcp.send(message)) messages.push(event.data);
        return messages;
      };
      const initialized = await answers({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'sdk-e2e', version: '1.0.0' } },
      });
      expect(initialized.at(-1)).toMatchObject({ jsonrpc: '2.0', id: 1, result: { serverInfo: expect.any(Object) } });
      const listed = await answers({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
      const tools = (listed.at(-1) as { result: { tools: { name: string }[] } }).result.tools.map((tool) => tool.name);
      expect(tools).toEqual(expect.arrayContaining(['news', 'stock_report', 'analysis', 'chat']));
      // GET /mcp, the optional server-initiated stream, is not offered: 405, and no SDK method.
      expect('listen' in client.mcp).toBe(false);
      const refused = await fetch(`${system.gatewayUrl}/mcp`, { headers: { 'X-API-Key': key, Accept: 'text/event-stream' } });
      expect(refused.status).toBe(405);
      expect(((await refused.json()) as { type: string }).type).toBe('method_not_allowed');
    });
  });
});
