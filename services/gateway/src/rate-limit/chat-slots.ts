import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { withTransaction, type Pool } from '@fin/db';
import { tooManyRequests } from '@fin/http';
import type { Logger } from '@fin/log';
import type { Principal } from '../auth/types';

// pg_advisory_xact_lock(classid, objid): the class keeps these locks apart from any other advisory lock.
const CHAT_LOCK_CLASS = 0x63686174; // "chat"
// Reclaims the key's expired slots, then takes one only if fewer than the limit are live. Run under the key's
// advisory lock, in a statement that starts after the lock is granted, so its count sees every slot taken
// by an earlier holder of the lock: two replicas cannot both take the 10th slot.
const TAKE_SLOT = `
  WITH reclaimed AS (
    DELETE FROM chat_stream_slots WHERE key_id = $2::uuid AND lease_expires_at <= now()
  )
  INSERT INTO chat_stream_slots (slot_id, key_id, holder, lease_expires_at)
  SELECT $1::uuid, $2::uuid, $3, now() + $4::int * interval '1 millisecond'
   WHERE (SELECT count(*) FROM chat_stream_slots WHERE key_id = $2::uuid AND lease_expires_at > now()) < $5::int`;
/** What a refused client is told to wait: a stream's end cannot be predicted, so a short, fixed pause. */
const RETRY_AFTER_SECONDS = 5;

export interface ChatSlotOptions {
  pool: Pool;
  logger: Logger;
  maxConcurrent: number;
  leaseMs: number;
  heartbeatMs: number;
}

export interface ChatSlots {
  acquire(principal: Principal): Promise<() => Promise<void>>;
  /** Stops renewing and gives back every slot this process still holds. */
  close(): Promise<void>;
}

/**
 * Concurrent chat streams per key, counted in chat_stream_slots so the limit holds across replicas. A slot
 * is a lease: this process renews all the slots it holds every `heartbeatMs`, and a slot whose holder died
 * (no renewal for `leaseMs`) is reclaimed by the next acquire or sweep.
 */
export function createChatSlots({ pool, logger, maxConcurrent, leaseMs, heartbeatMs }: ChatSlotOptions): ChatSlots {
  const holder = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  const held = new Set<string>();
  let heartbeat: NodeJS.Timeout | undefined;
  let renewing: Promise<void> = Promise.resolve();

  const renew = () => {
    const ids = [...held];
    if (ids.length === 0) return;
    renewing = pool
      .query<{ slot_id: string }>(
        `UPDATE chat_stream_slots SET lease_expires_at = now() + $2::int * interval '1 millisecond'
          WHERE slot_id = ANY($1::uuid[]) RETURNING slot_id`,
        [ids, leaseMs],
      )
      .then(
        ({ rows }) => {
          const renewed = new Set(rows.map((row) => row.slot_id));
          const lost = ids.filter((id) => !renewed.has(id) && held.has(id));
          // Renewals failed for longer than the lease and another request reclaimed the slot. The stream goes
          // on; it just no longer counts against the key.
          if (lost.length > 0) logger.warn({ slots: lost.length }, 'chat slots expired before their stream ended');
          for (const id of lost) held.delete(id);
        },
        (error: unknown) => logger.warn({ err: error }, 'could not renew chat-stream leases; retrying at the next heartbeat'),
      );
  };

  const syncHeartbeat = () => {
    if (held.size > 0 && !heartbeat) {
      heartbeat = setInterval(renew, heartbeatMs);
      heartbeat.unref();
    } else if (held.size === 0 && heartbeat) {
      clearInterval(heartbeat);
      heartbeat = undefined;
    }
  };

  return {
    async acquire(principal) {
      const limit = principal.limitOverrides.chat ?? maxConcurrent;
      const slotId = randomUUID();
      let taken: boolean;
      try {
        taken = await withTransaction(pool, async (client) => {
          await client.query('SELECT pg_advisory_xact_lock($1::int, hashtext($2::text))', [CHAT_LOCK_CLASS, principal.keyId]);
          const { rowCount } = await client.query(TAKE_SLOT, [slotId, principal.keyId, holder, leaseMs, limit]);
          return rowCount === 1;
        });
      } catch (error) {
        // Fail open, like the per-minute limits: an unreachable database must not also stop every chat.
        logger.warn({ err: error, keyId: principal.keyId }, 'could not take a chat slot; allowing the stream uncounted');
        return async () => undefined;
      }
      if (!taken) {
        throw tooManyRequests(
          `Too many concurrent chat streams: this API key may have ${limit} open at once. Close one and retry.`,
          RETRY_AFTER_SECONDS,
          { 'X-RateLimit-Limit': String(limit), 'X-RateLimit-Remaining': '0' },
        );
      }
      held.add(slotId);
      syncHeartbeat();
      let released = false;
      return async () => {
        if (released) return;
        released = true;
        held.delete(slotId);
        syncHeartbeat();
        try {
          await pool.query('DELETE FROM chat_stream_slots WHERE slot_id = $1', [slotId]);
        } catch (error) {
          // The lease runs out on its own; the slot is only unavailable until then.
          logger.warn({ err: error }, 'could not release a chat slot; it frees itself when its lease expires');
        }
      };
    },
    async close() {
      const ids = [...held];
      held.clear();
      syncHeartbeat();
      await renewing;
      if (ids.length === 0) return;
      try {
        await pool.query('DELETE FROM chat_stream_slots WHERE slot_id = ANY($1::uuid[])', [ids]);
      } catch (error) {
        logger.warn({ err: error }, 'could not release chat slots at shutdown; their leases will expire');
      }
    },
  };
}
