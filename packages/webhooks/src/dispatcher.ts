// Sends queued deliveries. Each round claims due rows with FOR UPDATE SKIP LOCKED and leases them (owner and
// expiry in the row), so any number of dispatchers share the work and a dispatcher killed mid-delivery loses
// nothing: its lease expires and another (or the restarted one) sends the row again. A delivery is therefore sent
// at least once; receivers drop repeats by `webhook-id`, which stays the same on every attempt.
//
// Every attempt goes through the customer-tools executor: public addresses only (checked in the connect hook,
// no DNS rebinding window), redirects refused, a time limit, a cap on what is read back. Its outcome is recorded
// (never the body or headers sent) with the row's next state in the statement that releases the lease, and only
// while the lease is still this dispatcher's.
import { randomUUID } from 'node:crypto';
import { WEBHOOK_RESPONSE_EXCERPT_MAX, type WebhookAttemptOutcome } from '@fin/contracts';
import type { CallResult, Keyring, ToolExecutor } from '@fin/customer-tools';
import type { Pool } from '@fin/db';
import type { Logger } from '@fin/log';
import { webhookAttempts } from '@fin/metrics';
import { DEFAULT_RETRY_SCHEDULE, retryDelayMs, type RetrySchedule } from './backoff';
import { callbackSealContext, endpointSealContext } from './store';
import { signedHeaders } from './signing';

export const DEFAULT_DELIVERY_TIMEOUT_MS = 10_000;
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
  /** Deliveries claimed (and sent concurrently) per round. */
  batchSize?: number;
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
  /** One round: claims, sends and records due deliveries; resolves with how many were sent. */
  runOnce(): Promise<number>;
  /** Deletes finished deliveries older than DELIVERY_RETENTION_DAYS (done hourly while started); resolves with how many. */
  sweep(): Promise<number>;
  /** Stops looking and waits for the attempts in flight (each bounded by the time limit). */
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

export function createWebhookDispatcher(options: DispatcherOptions): WebhookDispatcher {
  const {
    pool,
    keyring,
    executor,
    intervalMs = 1_000,
    batchSize = 16,
    timeoutMs = DEFAULT_DELIVERY_TIMEOUT_MS,
    retry = DEFAULT_RETRY_SCHEDULE,
    owner = `dispatcher-${randomUUID()}`,
  } = options;
  const log = options.logger.child({ component: 'webhook-dispatcher' });
  // Longer than an attempt can take, so a live dispatcher never loses a lease it is still using.
  const leaseMs = timeoutMs + 5_000;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
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

  async function claim(): Promise<ClaimedRow[]> {
    const { rows } = await pool.query<ClaimedRow>({
      name: 'webhooks-claim',
      text: `WITH due AS (
               SELECT id FROM webhook_deliveries
                WHERE status = 'pending' AND next_attempt_at <= now() AND (lease_expires_at IS NULL OR lease_expires_at < now())
                  -- A disabled endpoint is sent nothing: its deliveries wait until it is enabled again.
                  AND (endpoint_id IS NULL OR EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.id = endpoint_id AND e.enabled))
                ORDER BY next_attempt_at LIMIT $3 FOR UPDATE OF webhook_deliveries SKIP LOCKED
             ), claimed AS (
               UPDATE webhook_deliveries d SET lease_owner = $1, lease_expires_at = now() + $2 * interval '1 millisecond'
                 FROM due WHERE d.id = due.id
               RETURNING d.id, d.tenant_id, d.endpoint_id, d.callback_url, d.body, d.attempt_count
             )
             SELECT c.id, c.tenant_id, c.endpoint_id, COALESCE(e.url, c.callback_url) AS url, c.body, c.attempt_count,
                    CASE WHEN c.endpoint_id IS NULL THEN s.secret_ciphertext ELSE e.secret_ciphertext END AS secret,
                    CASE WHEN c.endpoint_id IS NULL
                         THEN CASE WHEN s.previous_secret_expires_at > now() THEN s.previous_secret_ciphertext END
                         ELSE CASE WHEN e.previous_secret_expires_at > now() THEN e.previous_secret_ciphertext END END AS previous_secret
               FROM claimed c
               LEFT JOIN webhook_endpoints e ON e.id = c.endpoint_id
               LEFT JOIN webhook_callback_secrets s ON c.endpoint_id IS NULL AND s.tenant_id = c.tenant_id`,
      values: [owner, leaseMs, batchSize],
    });
    return rows;
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
    const { rows } = await pool.query<{ status: string }>({
      name: 'webhooks-record-attempt',
      text: `WITH attempt AS (
               INSERT INTO webhook_attempts (delivery_id, outcome, http_status, duration_ms, error, response_excerpt)
               SELECT id, $3, $4, $5, $6, $7 FROM webhook_deliveries WHERE id = $1 AND lease_owner = $2
             )
             UPDATE webhook_deliveries SET
                    status = CASE WHEN $8 THEN 'succeeded' WHEN now() + $9 * interval '1 millisecond' > give_up_at THEN 'failed' ELSE 'pending' END,
                    next_attempt_at = CASE WHEN $8 OR now() + $9 * interval '1 millisecond' > give_up_at THEN NULL
                                           ELSE now() + $9 * interval '1 millisecond' END,
                    attempt_count = attempt_count + 1, lease_owner = NULL, lease_expires_at = NULL, updated_at = now()
              WHERE id = $1 AND lease_owner = $2
             RETURNING status`,
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
  }

  async function runOnce(): Promise<number> {
    const rows = await claim();
    // Every attempt is waited for, also when one fails to record (its lease then expires and it is sent again).
    const failed = (await Promise.allSettled(rows.map((row) => send(row)))).find((outcome) => outcome.status === 'rejected');
    if (failed) throw failed.reason;
    return rows.length;
  }

  /** Whether a wake() arrived during the round just run (read through a call: it changes while a round awaits). */
  const wokenMeanwhile = (): boolean => again && !stopped;

  async function loop(): Promise<void> {
    for (;;) {
      again = false;
      try {
        if (Date.now() - lastSweep >= SWEEP_EVERY_MS) {
          lastSweep = Date.now();
          const deleted = await sweep();
          if (deleted > 0) log.info({ deleted, retentionDays: DELIVERY_RETENTION_DAYS }, 'old webhook deliveries deleted');
        }
        // A full batch means more may be due: go on at once.
        while (!stopped && (await runOnce()) === batchSize);
      } catch (error) {
        log.error({ err: error }, 'webhook dispatch round failed');
      }
      if (!wokenMeanwhile()) return;
    }
  }

  function schedule(): void {
    if (stopped) return;
    timer = setTimeout(tick, intervalMs);
    timer.unref();
  }

  function tick(): void {
    timer = undefined;
    running = loop().finally(() => {
      running = undefined;
      schedule();
    });
  }

  return {
    start() {
      if (!stopped) return;
      stopped = false;
      schedule();
    },
    wake() {
      if (stopped) return;
      if (running) {
        again = true;
        return;
      }
      if (timer) clearTimeout(timer);
      tick();
    },
    runOnce,
    sweep,
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      timer = undefined;
      await running;
    },
  };
}
