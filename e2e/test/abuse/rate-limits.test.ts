// Rate-limit accuracy with two gateway replicas on one database, as deployed: ten times a key's per-minute limit,
// sent at once and spread over both replicas inside one window, admits exactly the limit (the target allows +1%),
// with X-RateLimit-* headers that agree with each other and with what was admitted; and ten times the chat
// concurrency (10 streams per key) opened at once over both replicas holds exactly 10.
//
// CI: the news limit at the spec's 100 per minute and an operator override of 37, each under 10× at the same time.
// ABUSE_SIZE=full adds overrides of 500 and 1,000 (16,370 requests in all).
import { ErrorBody } from '@fin/contracts';
import { startFakeAnthropic, hangingReply, type FakeAnthropic } from '@fin/fakes';
import { createKey, createTenant, setLimitOverride } from '@fin/gateway/admin';
import { openEventStream, waitFor, type EventStreamClient } from '@fin/testing';
import { createHttpClient, type HttpClient, type WireResponse } from '../../src/abuse/http';
import { startReplicatedGateways, type ReplicatedGateways } from '../../src/abuse/replicas';
import { ABUSE_SIZE, report } from '../../src/abuse/report';

/** Per-minute news limits under test: the spec's default, and operator overrides (null: the default). */
const LIMITS: readonly { tenant: string; override: number | null; limit: number }[] = [
  { tenant: 'spec-default', override: null, limit: 100 },
  { tenant: 'override-37', override: 37, limit: 37 },
  ...(ABUSE_SIZE === 'full' ? [{ tenant: 'override-500', override: 500, limit: 500 }, { tenant: 'override-1000', override: 1_000, limit: 1_000 }] : []),
];
const OVERLOAD = 10;
const CHAT_SLOTS = 10;

function header(response: WireResponse, name: string): string | undefined {
  const value = response.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

describe('rate limits across two gateway replicas', () => {
  let claude: FakeAnthropic;
  let system: ReplicatedGateways;
  let clients: HttpClient[];
  const figures: Record<string, unknown>[] = [];

  beforeAll(async () => {
    // A model that never answers: chat streams stay open, holding their slots, until the client leaves.
    claude = await startFakeAnthropic({ handler: () => hangingReply() });
    system = await startReplicatedGateways({ replicas: 2, anthropicUrl: claude.url });
    clients = system.gateways.map((url) => createHttpClient(url, { connections: 64 }));
  }, 180_000);

  afterAll(async () => {
    for (const client of clients ?? []) client.close();
    await system?.stop();
    await claude?.close();
    const line = figures.map((figure) => `${figure.what}: admitted ${figure.admitted} of ${figure.sent} (limit ${figure.limit})`).join('; ');
    report('rate-limits', `2 gateway replicas, ${OVERLOAD}× each limit at once: ${line}`, { replicas: 2, overload: OVERLOAD, results: figures });
  });

  it(`admits exactly each key's per-minute limit out of ${OVERLOAD}× as many requests spread over both replicas, with consistent headers`, async () => {
    const keys: string[] = [];
    for (const { tenant, override } of LIMITS) {
      await createTenant(system.pool, tenant);
      if (override !== null) await setLimitOverride(system.pool, tenant, 'news', override);
      keys.push((await createKey(system.pool, { tenant, scopes: ['news'] })).apiKey);
    }
    const body = Buffer.from(JSON.stringify({ symbols: ['AAPL'], n: 3 }));
    // Every key's burst at the same time, request i to replica i % 2, all in flight together.
    const bursts = await Promise.all(
      LIMITS.map(({ limit }, index) =>
        Promise.all(
          Array.from({ length: limit * OVERLOAD }, (_, n) =>
            (clients[n % clients.length] as HttpClient).send({
              method: 'POST',
              target: '/api/products/news',
              headers: [['X-API-Key', keys[index] as string], ['Content-Type', 'application/json']],
              body,
            }),
          ),
        ),
      ),
    );

    LIMITS.forEach(({ tenant, limit }, index) => {
      const responses = bursts[index] as WireResponse[];
      const admitted = responses.filter((response) => response.status === 200 || response.status === 202);
      const refused = responses.filter((response) => response.status === 429);
      figures.push({ what: `news, ${tenant}`, limit, sent: responses.length, admitted: admitted.length, refused: refused.length });
      // Nothing but admissions and refusals.
      expect(admitted.length + refused.length).toBe(responses.length);
      // Admitted: at most the limit (+1%), and no fewer (every request was valid).
      expect(admitted.length).toBeLessThanOrEqual(Math.floor(limit * 1.01));
      expect(admitted.length).toBe(limit);

      // One window: every answer names the same limit and the same reset time.
      expect(new Set(responses.map((response) => header(response, 'x-ratelimit-limit')))).toEqual(new Set([String(limit)]));
      const resets = new Set(responses.map((response) => header(response, 'x-ratelimit-reset')));
      expect(resets.size).toBe(1);
      const reset = Number([...resets][0]);
      expect(reset).toBeGreaterThan(Date.now() / 1000);
      expect(reset).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000) + 60);
      // Each admitted request saw its own count: the remainders are limit-1 … 0, each exactly once.
      expect(admitted.map((response) => Number(header(response, 'x-ratelimit-remaining'))).sort((a, b) => b - a)).toEqual(Array.from({ length: limit }, (_, n) => limit - 1 - n));
      for (const response of refused) {
        expect(header(response, 'x-ratelimit-remaining')).toBe('0');
        const retryAfter = Number(header(response, 'retry-after'));
        expect(retryAfter).toBeGreaterThanOrEqual(1);
        expect(retryAfter).toBeLessThanOrEqual(60);
        expect(ErrorBody.parse(JSON.parse(response.body.toString('utf8')))).toMatchObject({ status_code: 429, type: 'rate_limit_exceeded' });
      }
    });
  }, 120_000);

  it(`holds exactly ${CHAT_SLOTS} chat streams of a key open out of ${OVERLOAD}× as many over both replicas, and frees them when they close`, async () => {
    await createTenant(system.pool, 'chatty');
    const key = (await createKey(system.pool, { tenant: 'chatty', scopes: ['chat'] })).apiKey;
    const gateways = system.gateways;
    const open = (n: number) =>
      openEventStream(`${gateways[n % gateways.length]}/api/chat`, { headers: { 'X-API-Key': key }, body: { message: `Stream ${n}`, conversation_id: null } });
    const streams: EventStreamClient[] = await Promise.all(Array.from({ length: CHAT_SLOTS * OVERLOAD }, (_, n) => open(n)));
    try {
      const held = streams.filter((stream) => stream.status === 200);
      const refused = streams.filter((stream) => stream.status === 429);
      // Per-replica limits would hold 10 on each; the shared limit holds 10 in all, wherever they landed.
      const perReplica = gateways.map((_, replica) => streams.filter((stream, n) => n % gateways.length === replica && stream.status === 200).length);
      figures.push({ what: 'chat streams', limit: CHAT_SLOTS, sent: streams.length, admitted: held.length, refused: refused.length, heldPerReplica: perReplica });
      expect(held.length + refused.length).toBe(streams.length);
      expect(held.length).toBe(CHAT_SLOTS);
      for (const stream of refused) {
        expect(stream.headers['x-ratelimit-limit']).toBe(String(CHAT_SLOTS));
        expect(stream.headers['x-ratelimit-remaining']).toBe('0');
        expect(stream.headers['retry-after']).toBe('5');
        expect(ErrorBody.parse(await stream.body())).toMatchObject({ status_code: 429, type: 'rate_limit_exceeded' });
      }
    } finally {
      for (const stream of streams) stream.close();
    }
    // Closing them frees the slots: a new stream is admitted again on either replica.
    for (const replica of [0, 1]) {
      const again = await waitFor(
        async () => {
          const stream = await open(replica);
          if (stream.status === 200) return stream;
          await stream.body();
          return undefined;
        },
        { timeoutMs: 30_000, what: `a free chat slot on replica ${replica + 1}` },
      );
      again.close();
    }
  }, 120_000);
});
