import { createPool, type Pool } from '@fin/db';
import { AppError } from '@fin/http';
import { createLogger } from '@fin/log';
import { createTestDatabase, waitFor, type TestDatabase } from '@fin/testing';
import { createKey, createTenant } from '@fin/api-keys';
import type { Principal } from '../src/auth/types';
import { createRateLimits, type PostgresRateLimits, type RateLimitsOptions } from '../src/rate-limit/rate-limits';

const logger = createLogger({ service: 'chat-slot-test', level: 'silent' });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('concurrent chat streams', () => {
  let db: TestDatabase;
  let pool: Pool;
  let poolB: Pool;
  const instances: PostgresRateLimits[] = [];

  function replica(options: Partial<RateLimitsOptions> = {}, on: Pool = pool): PostgresRateLimits {
    const limits = createRateLimits({ pool: on, logger, ...options });
    instances.push(limits);
    return limits;
  }

  let accounts = 0;
  /** A principal for a real key (slots reference api_keys) of a new account, or of `sameAccountAs`'s account. */
  async function principal(limitOverrides: Record<string, number> = {}, sameAccountAs?: Principal): Promise<Principal> {
    let tenant = sameAccountAs?.tenantName;
    let id = sameAccountAs?.tenantId;
    if (tenant === undefined || id === undefined) {
      tenant = `account-${++accounts}`;
      id = (await createTenant(pool, tenant)).id;
    }
    const { key } = await createKey(pool, { tenant, scopes: ['chat'] });
    return { tenantId: id, tenantName: tenant, keyId: key.id, scopes: ['chat'], limitOverrides };
  }

  async function liveSlotsOfAccount(account: Principal): Promise<number> {
    const { rows } = await pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM chat_stream_slots s JOIN api_keys k ON k.id = s.key_id
        WHERE k.tenant_id = $1 AND s.lease_expires_at > now()`,
      [account.tenantId],
    );
    return rows[0]?.n ?? 0;
  }

  async function liveSlots(keyId: string): Promise<number> {
    const { rows } = await pool.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM chat_stream_slots WHERE key_id = $1 AND lease_expires_at > now()',
      [keyId],
    );
    return rows[0]?.n ?? 0;
  }

  async function refusal(promise: Promise<unknown>): Promise<AppError> {
    const error = await promise.then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(AppError);
    return error as AppError;
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool({ connectionString: db.url, applicationName: 'chat-slot-test', max: 12 });
    poolB = createPool({ connectionString: db.url, applicationName: 'chat-slot-test-b', max: 12 });
  });
  afterEach(async () => {
    await Promise.all(instances.splice(0).map((limits) => limits.close()));
  });
  afterAll(async () => {
    await pool.end();
    await poolB.end();
    await db.drop();
  });

  it('refuses the 11th concurrent chat request of an account with 429, and a release frees a slot', async () => {
    const limits = replica();
    const who = await principal();
    const releases = [];
    for (let slot = 0; slot < 10; slot++) releases.push(await limits.acquireChatSlot(who));
    expect(await liveSlots(who.keyId)).toBe(10);

    const error = await refusal(limits.acquireChatSlot(who));
    expect(error.toBody()).toEqual({
      detail: expect.stringMatching(
        /^Too many concurrent chat requests: this account may have 10 in flight at once, all of its API keys together/,
      ),
      status_code: 429,
      type: 'rate_limit_exceeded',
    });
    expect(error.headers).toEqual({ 'X-RateLimit-Limit': '10', 'X-RateLimit-Remaining': '0', 'Retry-After': '5' });

    await releases[0]?.('ended');
    await releases[0]?.('ended'); // releasing twice frees one slot, not two
    expect(await liveSlots(who.keyId)).toBe(9);
    releases[0] = await limits.acquireChatSlot(who);
    await refusal(limits.acquireChatSlot(who));

    // Another account has its own ten.
    const other = await principal();
    await expect(limits.acquireChatSlot(other)).resolves.toEqual(expect.any(Function));
  });

  it("counts the chat requests of all of an account's keys together, across replicas", async () => {
    const a = replica();
    const b = replica({}, poolB);
    const first = await principal();
    const keys = [first, await principal({}, first), await principal({}, first), await principal({}, first)];
    const outcomes = await Promise.all(
      Array.from({ length: 24 }, (_, index) =>
        (index % 2 === 0 ? a : b).acquireChatSlot(keys[index % keys.length] as Principal).then(
          () => 'taken',
          (error: unknown) => (error as AppError).status,
        ),
      ),
    );
    expect(outcomes.filter((outcome) => outcome === 'taken')).toHaveLength(10);
    expect(outcomes.filter((outcome) => outcome === 429)).toHaveLength(14);
    expect(await liveSlotsOfAccount(first)).toBe(10);
    // A key minted now gets nothing more.
    await refusal(a.acquireChatSlot(await principal({}, first)));
  });

  it("keeps a slot whose client left taken for the chat service's detach grace, then frees it", async () => {
    // The chat service runs a reply on for its grace after the client left: the slot stands for that reply.
    const limits = replica({ chatDetachGraceMs: 200 });
    const who = await principal({ chat: 1 });
    const release = await limits.acquireChatSlot(who);
    await release('detached');
    await refusal(limits.acquireChatSlot(who));
    expect(await liveSlots(who.keyId)).toBe(1);
    // Not renewed any more: it expires on its own (grace + margin), and the next request takes it over.
    const next = await waitFor(() => limits.acquireChatSlot(who).catch(() => undefined), {
      timeoutMs: 10_000,
      what: 'the detached slot to free itself',
    });
    await next('ended');
    // A reply that ended (the service ended the response) frees its slot at once.
    await expect(limits.acquireChatSlot(who)).resolves.toEqual(expect.any(Function));
  });

  it('holds across replicas: concurrent acquisitions from two processes take exactly 10 slots', async () => {
    const a = replica();
    const b = replica({}, poolB);
    const who = await principal();
    const outcomes = await Promise.all(
      Array.from({ length: 16 }, (_, index) =>
        (index % 2 === 0 ? a : b).acquireChatSlot(who).then(
          () => 'taken',
          (error: unknown) => (error as AppError).status,
        ),
      ),
    );
    expect(outcomes.filter((outcome) => outcome === 'taken')).toHaveLength(10);
    expect(outcomes.filter((outcome) => outcome === 429)).toHaveLength(6);
    expect(await liveSlots(who.keyId)).toBe(10);
  });

  it('applies a tenant override of the concurrency', async () => {
    const limits = replica();
    const who = await principal({ chat: 2 });
    await limits.acquireChatSlot(who);
    await limits.acquireChatSlot(who);
    const error = await refusal(limits.acquireChatSlot(who));
    expect(error.detail).toContain('may have 2 in flight at once');
  });

  it('reclaims the slot of a holder that stopped renewing (a crashed replica)', async () => {
    // This "replica" never renews within the test: its leases lapse after 1 s, as if it had crashed.
    const crashed = replica({ chatLeaseMs: 1_000, chatHeartbeatMs: 3_600_000 });
    const survivor = replica({}, poolB);
    const who = await principal();
    for (let slot = 0; slot < 10; slot++) await crashed.acquireChatSlot(who);
    await refusal(survivor.acquireChatSlot(who));
    await sleep(1_100);
    for (let slot = 0; slot < 10; slot++) await survivor.acquireChatSlot(who);
    await refusal(survivor.acquireChatSlot(who));
    const { rows } = await pool.query<{ holders: number }>(
      'SELECT count(DISTINCT holder)::int AS holders FROM chat_stream_slots WHERE key_id = $1',
      [who.keyId],
    );
    expect(rows[0]?.holders).toBe(1); // the lapsed slots were deleted, not left beside the new ones
  });

  it('reclaims a slot whose lease expired in the database', async () => {
    const limits = replica();
    const who = await principal();
    for (let slot = 0; slot < 10; slot++) await limits.acquireChatSlot(who);
    await pool.query(
      `UPDATE chat_stream_slots SET lease_expires_at = now() - interval '1 second'
        WHERE slot_id IN (SELECT slot_id FROM chat_stream_slots WHERE key_id = $1 LIMIT 3)`,
      [who.keyId],
    );
    for (let slot = 0; slot < 3; slot++) await limits.acquireChatSlot(who);
    await refusal(limits.acquireChatSlot(who));
  });

  it('keeps a live stream’s slot by renewing its lease', async () => {
    const holder = replica({ chatLeaseMs: 1_000, chatHeartbeatMs: 200 });
    const other = replica({}, poolB);
    const who = await principal({ chat: 1 });
    const release = await holder.acquireChatSlot(who);
    await sleep(2_000); // twice the lease
    await refusal(other.acquireChatSlot(who));
    expect(await liveSlots(who.keyId)).toBe(1);
    await release('ended');
    await expect(other.acquireChatSlot(who)).resolves.toEqual(expect.any(Function));
  });

  it('gives back its slots when closed, and sweeping deletes expired ones', async () => {
    const limits = replica();
    const who = await principal();
    await limits.acquireChatSlot(who);
    await limits.acquireChatSlot(who);
    expect(await liveSlots(who.keyId)).toBe(2);
    await limits.close();
    instances.splice(instances.indexOf(limits), 1);
    expect(await liveSlots(who.keyId)).toBe(0);

    const lapsed = replica({ chatLeaseMs: 1, chatHeartbeatMs: 3_600_000 });
    await lapsed.acquireChatSlot(who);
    await sleep(20);
    expect((await lapsed.sweep()).chatSlots).toBe(1);
    const { rows } = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM chat_stream_slots WHERE key_id = $1', [who.keyId]);
    expect(rows[0]?.n).toBe(0);
  });
});
