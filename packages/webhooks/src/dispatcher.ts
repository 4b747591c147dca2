// Sends queued deliveries, fairly. Attempts never wait for each other: each runs on its own and, when it ends, the
// dispatcher claims more at once. A claim takes due rows with a lease (owner and expiry in the row), so any number
// of dispatchers share the work and a dispatcher killed mid-delivery loses nothing: its lease expires and another
// (or the restarted one) sends the row again. A delivery is therefore sent at least once; receivers drop repeats by
// `webhook-id`, which stays the same on every attempt.
//
// Fairness, across every dispatcher (the leased rows are the attempts in flight, and claims are serialised by an
// advisory lock so the bounds hold exactly): at most `perTargetConcurrency` attempts to one endpoint (or one callback
// URL of an account) and `perTenantConcurrency` for one account are in flight, and a claim takes every account's
// oldest due row before any account's second. An endpoint that hangs or fails therefore holds only its own few
// slots, retries on its own backoff, and the rows behind it wait for those slots, never another account's. Nothing
// is claimed for a disabled account or endpoint. At most `hostAttemptsPerMinute` attempts of one account go to one
// destination in any minute (a sliding window of 1 s buckets in rate_limit_counters, shared by every replica): to
// one resolved address, however many names point at it, and to one registrable domain, whatever its names resolve
// to. The address is the executor's own resolution, the one the attempt connects to. A row over it waits, without
// an attempt, until the window has room. An endpoint whose every attempt fails for WEBHOOK_FAILING_DISABLE_DAYS is disabled,
// with its reason, by the statement that records the attempt.
//
// Every attempt goes through the customer-tools executor: public addresses only (checked in the connect hook,
// no DNS rebinding window), redirects refused, a time limit, a cap on what is read back. Its outcome is recorded
// (never the body or headers sent) with the row's next state in the statement that releases the lease, and only
// while the lease is still this dispatcher's.
import { randomUUID } from 'node:crypto';
import { isIP } from 'node:net';
import { WEBHOOK_FAILING_DISABLE_DAYS, WEBHOOK_RESPONSE_EXCERPT_MAX, type WebhookAttemptOutcome } from '@fin/contracts';
import { bareAddress, type CallResult, type Keyring, type ToolExecutor } from '@fin/customer-tools';
import { addCounterHits, withTransaction, type Pool } from '@fin/db';
import type { Logger } from '@fin/log';
import { webhookAttempts } from '@fin/metrics';
import { getDomain } from 'tldts';
import { DEFAULT_RETRY_SCHEDULE, retryDelayMs, type RetrySchedule } from './backoff';
import { callbackSealContext, endpointSealContext } from './store';
import { signedHeaders } from './signing';

export const DEFAULT_DELIVERY_TIMEOUT_MS = 10_000;
/** Attempts in flight in one process (each holds a socket and little else). */
export const DEFAULT_MAX_IN_FLIGHT = 256;
/** Attempts in flight to one endpoint, or to one callback URL of an account, all dispatchers together. */
export const DEFAULT_PER_TARGET_CONCURRENCY = 4;
/** Attempts in flight for one account, all dispatchers together. */
export const DEFAULT_PER_TENANT_CONCURRENCY = 16;
/** Attempts one account may send to one host (all its endpoints and callback URLs there) per minute. */
export const DEFAULT_HOST_ATTEMPTS_PER_MINUTE = 300;
/** The budget's window is counted in this many buckets (plus the current one): 1 s each for the minute. */
const WINDOW_BUCKETS = 60;
const DISABLE_AFTER_MS = WEBHOOK_FAILING_DISABLE_DAYS * 86_400_000;
/** The advisory lock that serialises claims across dispatchers (a constant of this statement's own). */
const CLAIM_LOCK = 270_271;
/** The advisory lock that serialises the per-destination budget checks across dispatchers. */
const BUDGET_LOCK = 270_272;
/** Finished deliveries (and their attempts) are deleted this long after their last change. */
const DELIVERY_RETENTION_DAYS = 30;
const SWEEP_EVERY_MS = 3600_000;
const SWEEP_BATCH = 1_000;
const USER_AGENT = 'FinancialIntelligenceAPI-Webhooks/1.0';

export interface DispatcherOptions {
  pool: Pool;
  keyring: Keyring;
  executor: ToolExecutor;
  logger: Logger;
  /** How often due deliveries are looked for when nothing woke the dispatcher. */
  intervalMs?: number;
  /** Most deliveries one claim takes. */
  batchSize?: number;
  /** Most attempts in flight in this process. */
  maxInFlight?: number;
  /** Most attempts in flight to one endpoint (or callback URL), all dispatchers together. */
  perTargetConcurrency?: number;
  /** Most attempts in flight for one account, all dispatchers together. */
  perTenantConcurrency?: number;
  /** Most attempts one account sends to one destination (address, registrable domain) per minute, all dispatchers together. */
  hostAttemptsPerMinute?: number;
  /** Tests only: the sliding window hostAttemptsPerMinute is counted over (default a minute). */
  hostWindowMs?: number;
  /** Time limit of one attempt: connect, answer and body. */
  timeoutMs?: number;
  retry?: RetrySchedule;
  /** Identifies this dispatcher in leases (default: a random id). */
  owner?: string;
}

export interface WebhookDispatcher {
  start(): void;
  /** Looks for due deliveries now (the consumer calls it after queuing). */
  wake(): void;
  /** One claim: sends what it took and resolves, once those attempts are recorded, with how many were sent. */
  runOnce(): Promise<number>;
  /** Deletes finished deliveries older than DELIVERY_RETENTION_DAYS (done hourly while started); resolves with how many. */
  sweep(): Promise<number>;
  /** Stops claiming and waits for the attempts in flight (each bounded by the time limit). */
  stop(): Promise<void>;
}

interface ClaimedRow {
  id: string;
  tenant_id: string;
  endpoint_id: string | null;
  url: string;
  body: string;
  attempt_count: number;
  secret: Buffer | null;
  previous_secret: Buffer | null;
}

/** The executor's outcome as an attempt outcome: a 2xx is delivered even when its (ignored) body was too large. */
function attemptOutcome(result: CallResult): WebhookAttemptOutcome {
  switch (result.outcome) {
    case 'response_too_large':
      return result.httpStatus !== null && result.httpStatus >= 200 && result.httpStatus < 300 ? 'ok' : 'http_error';
    case 'aborted':
      return 'connection_failed';
    default:
      return result.outcome;
  }
}

/**
 * The destinations an attempt of `tenantId` to `url` is counted against, each limited to hostAttemptsPerMinute
 * over a sliding window: the address it connects to (however many names point there), and its host's registrable
 * domain (the public suffix list's ICANN section: every name under one domain bought once is one destination,
 * whatever addresses its wildcard records give). An IP literal is its own address; a host with no registrable
 * domain (a bare suffix, `localhost`) counts as itself; an attempt that will not connect (no public address)
 * counts against its domain only.
 */
function destinationKeys(tenantId: string, url: string, address: string | null): string[] {
  let host: string;
  try {
    host = bareAddress(new URL(url).hostname).toLowerCase().replace(/\.$/, '');
  } catch {
    return [`webhook-dest:${tenantId}:url:${url}`];
  }
  const keys = address === null ? [] : [`webhook-dest:${tenantId}:address:${address}`];
  if (isIP(host) === 0) keys.push(`webhook-dest:${tenantId}:domain:${getDomain(host) ?? host}`);
  else if (address === null) keys.push(`webhook-dest:${tenantId}:address:${host}`);
  return keys;
}

// Due rows of enabled accounts and endpoints, ranked within their target (endpoint, or callback URL of an account);
// those that fit their target's free slots are ranked within their account; those that fit the account's free
// slots are taken round-robin across accounts (every account's first, then every account's second, ...).
const CLAIM = `
  WITH busy AS (
    SELECT tenant_id, endpoint_id, callback_url, count(*)::int AS n
      FROM webhook_deliveries
     WHERE lease_owner IS NOT NULL AND lease_expires_at > now()
     GROUP BY tenant_id, endpoint_id, callback_url
  ), busy_tenant AS (
    SELECT tenant_id, sum(n)::int AS n FROM busy GROUP BY tenant_id
  ), due AS (
    SELECT d.id, d.tenant_id, d.endpoint_id, d.callback_url, d.next_attempt_at,
           row_number() OVER (PARTITION BY d.tenant_id, d.endpoint_id, d.callback_url ORDER BY d.next_attempt_at, d.id) AS target_rank
      FROM webhook_deliveries d
      JOIN tenants t ON t.id = d.tenant_id AND t.disabled_at IS NULL
      LEFT JOIN webhook_endpoints e ON e.id = d.endpoint_id
     WHERE d.status = 'pending' AND d.next_attempt_at <= now() AND (d.lease_expires_at IS NULL OR d.lease_expires_at < now())
       -- A disabled endpoint is sent nothing: its deliveries wait until it is enabled again.
       AND (d.endpoint_id IS NULL OR e.enabled)
  ), fits_target AS (
    SELECT due.id, due.tenant_id, due.next_attempt_at,
           row_number() OVER (PARTITION BY due.tenant_id ORDER BY due.target_rank, due.next_attempt_at, due.id) AS tenant_rank
      FROM due
      LEFT JOIN busy b ON b.tenant_id = due.tenant_id AND b.endpoint_id IS NOT DISTINCT FROM due.endpoint_id
                      AND b.callback_url IS NOT DISTINCT FROM due.callback_url
     WHERE due.target_rank + COALESCE(b.n, 0) <= $4
  ), picked AS (
    SELECT f.id FROM fits_target f LEFT JOIN busy_tenant bt ON bt.tenant_id = f.tenant_id
     WHERE f.tenant_rank + COALESCE(bt.n, 0) <= $5
     ORDER BY f.tenant_rank, f.next_attempt_at, f.id
     LIMIT $3
  ), claimed AS (
    UPDATE webhook_deliveries d SET lease_owner = $1, lease_expires_at = now() + $2 * interval '1 millisecond'
      FROM picked
     WHERE d.id = picked.id AND d.status = 'pending' AND (d.lease_expires_at IS NULL OR d.lease_expires_at < now())
    RETURNING d.id, d.tenant_id, d.endpoint_id, d.callback_url, d.body, d.attempt_count
  )
  SELECT c.id, c.tenant_id, c.endpoint_id, COALESCE(e.url, c.callback_url) AS url, c.body, c.attempt_count,
         CASE WHEN c.endpoint_id IS NULL THEN s.secret_ciphertext ELSE e.secret_ciphertext END AS secret,
         CASE WHEN c.endpoint_id IS NULL
              THEN CASE WHEN s.previous_secret_expires_at > now() THEN s.previous_secret_ciphertext END
              ELSE CASE WHEN e.previous_secret_expires_at > now() THEN e.previous_secret_ciphertext END END AS previous_secret
    FROM claimed c
    LEFT JOIN webhook_endpoints e ON e.id = c.endpoint_id
    LEFT JOIN webhook_callback_secrets s ON c.endpoint_id IS NULL AND s.tenant_id = c.tenant_id`;

// The attempt, the delivery's next state, and the endpoint's health, in one statement that checks the lease. The
// endpoint is written only when its health changes: its first failure since a 2xx (failing_since), a 2xx after
// failures, or a failure once it has failed for DISABLE_AFTER_MS, which disables it with the reason.
const RECORD = `
  WITH attempt AS (
    INSERT INTO webhook_attempts (delivery_id, outcome, http_status, duration_ms, error, response_excerpt)
    SELECT id, $3, $4, $5, $6, $7 FROM webhook_deliveries WHERE id = $1 AND lease_owner = $2
  ), delivery AS (
    UPDATE webhook_deliveries SET
           status = CASE WHEN $8 THEN 'succeeded' WHEN now() + $9 * interval '1 millisecond' > give_up_at THEN 'failed' ELSE 'pending' END,
           next_attempt_at = CASE WHEN $8 OR now() + $9 * interval '1 millisecond' > give_up_at THEN NULL
                                  ELSE now() + $9 * interval '1 millisecond' END,
           attempt_count = attempt_count + 1, lease_owner = NULL, lease_expires_at = NULL, updated_at = now()
     WHERE id = $1 AND lease_owner = $2
    RETURNING status, endpoint_id
  ), endpoint AS (
    UPDATE webhook_endpoints e SET
           failing_since = CASE WHEN $8 THEN NULL ELSE COALESCE(e.failing_since, now()) END,
           enabled = $8 OR e.failing_since IS NULL OR e.failing_since > now() - $10 * interval '1 millisecond',
           disabled_at = CASE WHEN $8 OR e.failing_since IS NULL THEN NULL ELSE now() END,
           disabled_reason = CASE WHEN $8 OR e.failing_since IS NULL THEN NULL
                                  ELSE 'Every delivery attempt failed for ' || $11::text || ' days, since '
                                       || to_char(e.failing_since AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
                                       || ': disabled automatically. Enable it again once it answers 2xx; what waited is then sent.' END,
           updated_at = now()
      FROM delivery d
     WHERE e.id = d.endpoint_id AND e.enabled
       AND CASE WHEN $8 THEN e.failing_since IS NOT NULL
                ELSE e.failing_since IS NULL OR e.failing_since <= now() - $10 * interval '1 millisecond' END
    RETURNING e.enabled
  )
  SELECT d.status, EXISTS (SELECT 1 FROM endpoint WHERE NOT enabled) AS endpoint_disabled FROM delivery d`;

export function createWebhookDispatcher(options: DispatcherOptions): WebhookDispatcher {
  const {
    pool,
    keyring,
    executor,
    intervalMs = 1_000,
    batchSize = 64,
    maxInFlight = DEFAULT_MAX_IN_FLIGHT,
    perTargetConcurrency = DEFAULT_PER_TARGET_CONCURRENCY,
    perTenantConcurrency = DEFAULT_PER_TENANT_CONCURRENCY,
    hostAttemptsPerMinute = DEFAULT_HOST_ATTEMPTS_PER_MINUTE,
    hostWindowMs = 60_000,
    timeoutMs = DEFAULT_DELIVERY_TIMEOUT_MS,
    retry = DEFAULT_RETRY_SCHEDULE,
    owner = `dispatcher-${randomUUID()}`,
  } = options;
  const log = options.logger.child({ component: 'webhook-dispatcher' });
  // Longer than an attempt can take, so a live dispatcher never loses a lease it is still using.
  const leaseMs = timeoutMs + 5_000;
  const bucketMs = Math.max(1, Math.round(hostWindowMs / WINDOW_BUCKETS));
  const inFlight = new Set<Promise<void>>();
  let timer: NodeJS.Timeout | undefined;
  let pumping: Promise<void> | undefined;
  let stopped = true;
  let again = false;
  let lastSweep = 0;

  /** Deletes finished deliveries past their retention, a batch at a time (every replica may; the work is shared). */
  async function sweep(): Promise<number> {
    let deleted = 0;
    for (;;) {
      const { rowCount } = await pool.query({
        name: 'webhooks-sweep',
        text: `DELETE FROM webhook_deliveries WHERE id IN (
                 SELECT id FROM webhook_deliveries
                  WHERE status <> 'pending' AND updated_at < now() - $1 * interval '1 day'
                  LIMIT $2 FOR UPDATE SKIP LOCKED)`,
        values: [DELIVERY_RETENTION_DAYS, SWEEP_BATCH],
      });
      deleted += rowCount ?? 0;
      if ((rowCount ?? 0) < SWEEP_BATCH || stopped) return deleted;
    }
  }

  async function claim(limit: number): Promise<ClaimedRow[]> {
    return withTransaction(pool, async (client) => {
      // One claim at a time, all dispatchers together: each sees the leases the previous one took, so the
      // per-target and per-account bounds hold exactly. A claim is one short statement.
      await client.query({ name: 'webhooks-claim-lock', text: 'SELECT pg_advisory_xact_lock($1)', values: [CLAIM_LOCK] });
      const { rows } = await client.query<ClaimedRow>({
        name: 'webhooks-claim',
        text: CLAIM,
        values: [owner, leaseMs, limit, perTargetConcurrency, perTenantConcurrency],
      });
      return rows;
    });
  }

  /**
   * Counts the claimed rows against their account's per-destination budgets: the address each attempt connects to
   * and its host's registrable domain, over the sliding window (see destinationKeys). The rows beyond a budget go
   * back, due when enough of the window's attempts have left it, without an attempt. Returns the rows to send.
   */
  async function withinHostBudget(rows: ClaimedRow[]): Promise<ClaimedRow[]> {
    if (rows.length === 0) return rows;
    // Resolved before the budget's lock is taken, so a slow name server delays only its own rows' claim.
    const keyed = await Promise.all(
      rows.map(async (row) => ({ row, keys: destinationKeys(row.tenant_id, row.url, await executor.destination(row.url)) })),
    );
    const { sendable, deferred } = await withTransaction(pool, async (client) => {
      // One budget check at a time, all dispatchers together, so that the window's counts are exact.
      await client.query({ name: 'webhooks-budget-lock', text: 'SELECT pg_advisory_xact_lock($1)', values: [BUDGET_LOCK] });
      const { rows: clock } = await client.query<{ bucket: string }>({
        name: 'webhooks-budget-bucket',
        text: 'SELECT floor(extract(epoch FROM now()) * 1000 / $1)::bigint::text AS bucket',
        values: [bucketMs],
      });
      const current = Number(clock[0]?.bucket);
      const keys = [...new Set(keyed.flatMap(({ keys: rowKeys }) => rowKeys))];
      const windowKeys = keys.flatMap((key) => Array.from({ length: WINDOW_BUCKETS + 1 }, (_, i) => `${key}:${current - i}`));
      const { rows: counted } = await client.query<{ counter_key: string; hits: number }>({
        name: 'webhooks-budget-read',
        text: 'SELECT counter_key, hits FROM rate_limit_counters WHERE counter_key = ANY ($1::text[]) AND reset_at > now()',
        values: [windowKeys],
      });
      // Per destination: attempts in the window, and per bucket, to tell when room opens again.
      const used = new Map<string, { hits: number; buckets: Map<number, number> }>(
        keys.map((key) => [key, { hits: 0, buckets: new Map<number, number>() }]),
      );
      for (const { counter_key: counterKey, hits } of counted) {
        const split = counterKey.lastIndexOf(':');
        const entry = used.get(counterKey.slice(0, split));
        if (entry === undefined) continue;
        entry.hits += hits;
        entry.buckets.set(Number(counterKey.slice(split + 1)), hits);
      }
      const admitted = new Map<string, number>();
      const sendable: ClaimedRow[] = [];
      const deferred: { id: string; until: Date }[] = [];
      const over = new Map<string, number>();
      for (const { row, keys: rowKeys } of keyed) {
        const full = rowKeys.filter((key) => (used.get(key)?.hits ?? 0) >= hostAttemptsPerMinute);
        if (full.length === 0) {
          for (const key of rowKeys) {
            const entry = used.get(key);
            if (entry === undefined) continue;
            entry.hits += 1;
            entry.buckets.set(current, (entry.buckets.get(current) ?? 0) + 1);
            admitted.set(key, (admitted.get(key) ?? 0) + 1);
          }
          sendable.push(row);
          continue;
        }
        // Due once the oldest attempts of every full destination have left the window.
        const until = Math.max(...full.map((key) => roomAt(used.get(key)?.buckets ?? new Map<number, number>())));
        deferred.push({ id: row.id, until: new Date((until + 1) * bucketMs) });
        for (const key of full) over.set(key, (over.get(key) ?? 0) + 1);
      }
      for (const [key, count] of over)
        log.warn(
          { destination: key.replace(/^webhook-dest:/, ''), deferred: count, limit: hostAttemptsPerMinute },
          'webhook attempts of one account to one destination over the per-minute limit; deferred until the window has room',
        );
      if (admitted.size > 0) {
        // Each bucket's row outlives the window it is counted in; the gateway's sweep deletes it after.
        await client.query(
          addCounterHits(
            [...admitted.keys()].map((key) => `${key}:${current}`),
            [...admitted.values()],
            hostWindowMs + bucketMs,
          ),
        );
      }
      return { sendable, deferred };
    });
    if (deferred.length > 0)
      await pool.query({
        name: 'webhooks-defer',
        text: `UPDATE webhook_deliveries d SET lease_owner = NULL, lease_expires_at = NULL, next_attempt_at = t.until, updated_at = now()
                 FROM unnest($1::uuid[], $2::timestamptz[]) AS t(id, until)
                WHERE d.id = t.id AND d.lease_owner = $3`,
        values: [deferred.map((row) => row.id), deferred.map((row) => row.until), owner],
      });
    return sendable;
  }

  /**
   * The last bucket whose attempts keep a destination full: once it has left the window, the window holds fewer
   * than the limit. Buckets are counted from the newest back, since the oldest leave first.
   */
  function roomAt(buckets: Map<number, number>): number {
    const newestFirst = [...buckets.entries()].sort(([a], [b]) => b - a);
    let kept = 0;
    for (const [bucket, hits] of newestFirst) {
      kept += hits;
      // Without this bucket and the older ones, the window has `kept - hits` attempts: room once it leaves.
      if (kept >= hostAttemptsPerMinute) return bucket + WINDOW_BUCKETS;
    }
    return (newestFirst.at(-1)?.[0] ?? 0) + WINDOW_BUCKETS;
  }

  function secretsOf(row: ClaimedRow): string[] {
    const context = row.endpoint_id === null ? callbackSealContext(row.tenant_id) : endpointSealContext(row.tenant_id, row.endpoint_id);
    return [row.secret, row.previous_secret]
      .filter((sealed): sealed is Buffer => sealed !== null)
      .map((sealed) => keyring.open(sealed, context).toString('utf8'));
  }

  async function send(row: ClaimedRow): Promise<void> {
    let result: CallResult;
    try {
      const secrets = secretsOf(row);
      if (secrets.length === 0) throw new Error('no signing secret is stored for this delivery');
      const headers = {
        ...signedHeaders(secrets, row.id, Math.floor(Date.now() / 1000), row.body),
        'user-agent': USER_AGENT,
        'content-type': 'application/json',
      };
      result = await executor.call({ endpoint: row.url, method: 'POST', headers, input: {}, body: row.body, timeoutMs });
    } catch (error) {
      // A secret that does not open (a key removed too early) is an operator's problem: logged, retried later.
      log.error({ err: error, deliveryId: row.id }, 'webhook delivery could not be signed');
      result = {
        outcome: 'invalid_endpoint',
        httpStatus: null,
        durationMs: 0,
        responseBytes: 0,
        contentType: null,
        body: null,
        error: 'the delivery could not be signed',
      };
    }
    const outcome = attemptOutcome(result);
    const delivered = outcome === 'ok';
    const delay = retryDelayMs(row.attempt_count + 1, retry);
    const excerpt = result.body === null || result.body === '' ? null : result.body.slice(0, WEBHOOK_RESPONSE_EXCERPT_MAX);
    const { rows } = await pool.query<{ status: string; endpoint_disabled: boolean }>({
      name: 'webhooks-record-attempt',
      text: RECORD,
      values: [
        row.id,
        owner,
        outcome,
        result.httpStatus,
        result.durationMs,
        result.error?.slice(0, 500) ?? null,
        excerpt,
        delivered,
        delay,
        DISABLE_AFTER_MS,
        WEBHOOK_FAILING_DISABLE_DAYS,
      ],
    });
    const status = rows[0]?.status;
    if (status !== undefined) webhookAttempts.inc({ outcome, delivery: status === 'pending' ? 'retrying' : status });
    const fields = {
      deliveryId: row.id,
      endpointId: row.endpoint_id,
      attempt: row.attempt_count + 1,
      outcome,
      httpStatus: result.httpStatus,
      durationMs: result.durationMs,
    };
    if (status === undefined) log.warn(fields, 'webhook attempt made after its lease was lost; not recorded');
    else if (delivered) log.info(fields, 'webhook delivered');
    else if (status === 'failed') log.warn({ ...fields, reason: result.error }, 'webhook delivery failed: no 2xx within its retry window');
    else log.info({ ...fields, reason: result.error, retryInMs: delay }, 'webhook attempt failed; retrying');
    if (rows[0]?.endpoint_disabled === true)
      log.warn(
        { tenantId: row.tenant_id, endpointId: row.endpoint_id, days: WEBHOOK_FAILING_DISABLE_DAYS },
        `webhook endpoint disabled: every attempt failed for ${WEBHOOK_FAILING_DISABLE_DAYS} days`,
      );
  }

  /** Starts an attempt on its own; it settles (never rejects) once recorded, and then frees its place. */
  function launch(row: ClaimedRow): Promise<void> {
    const attempt: Promise<void> = send(row)
      // Not recorded (the database failed): the lease expires and the row is sent again.
      .catch((error: unknown) => log.error({ err: error, deliveryId: row.id }, 'webhook attempt could not be recorded'))
      .finally(() => {
        inFlight.delete(attempt);
        wake();
      });
    inFlight.add(attempt);
    return attempt;
  }

  /** Claims as many due rows as there are free places (at most a batch) and starts them. */
  async function fill(): Promise<{ claimed: number; wanted: number; started: Promise<void>[] }> {
    const wanted = Math.min(batchSize, maxInFlight - inFlight.size);
    if (wanted <= 0) return { claimed: 0, wanted, started: [] };
    const rows = await claim(wanted);
    const sendable = await withinHostBudget(rows);
    return { claimed: rows.length, wanted, started: sendable.map(launch) };
  }

  async function runOnce(): Promise<number> {
    const { started } = await fill();
    await Promise.all(started);
    return started.length;
  }

  /** Whether a wake() arrived during the pass just run (read through a call: it changes while a pass awaits). */
  const wokenMeanwhile = (): boolean => again && !stopped;

  async function pump(): Promise<void> {
    for (;;) {
      again = false;
      try {
        if (Date.now() - lastSweep >= SWEEP_EVERY_MS) {
          lastSweep = Date.now();
          const deleted = await sweep();
          if (deleted > 0) log.info({ deleted, retentionDays: DELIVERY_RETENTION_DAYS }, 'old webhook deliveries deleted');
        }
        // A claim that took all it asked for may have left more due: claim again while there are free places.
        for (;;) {
          if (stopped) break;
          const { claimed, wanted } = await fill();
          if (wanted <= 0 || claimed < wanted) break;
        }
      } catch (error) {
        log.error({ err: error }, 'webhook claim failed');
      }
      if (!wokenMeanwhile()) return;
    }
  }

  /** Claims now, or right after the claim running (an attempt that ends wakes it too: its place is free). */
  function wake(): void {
    if (stopped) return;
    if (pumping) {
      again = true;
      return;
    }
    pumping = pump().finally(() => {
      pumping = undefined;
    });
  }

  return {
    start() {
      if (!stopped) return;
      stopped = false;
      timer = setInterval(wake, intervalMs);
      timer.unref();
      wake();
    },
    wake,
    runOnce,
    sweep,
    async stop() {
      stopped = true;
      if (timer) clearInterval(timer);
      timer = undefined;
      await pumping;
      await Promise.all(inFlight);
    },
  };
}
