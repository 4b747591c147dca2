import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { withTransaction, type Pool } from '@fin/db';
import { tooManyRequests } from '@fin/http';
import type { Logger } from '@fin/log';
import type { Principal } from '../auth/types';
import type { ReleaseChatSlot } from './types';

// pg_advisory_xact_lock(classid, objid): the class keeps these locks apart from any other advisory lock.
const CHAT_LOCK_CLASS = 0x63686174; // "chat"
// Reclaims the account's expired slots, then takes one only if fewer than the limit are live on all of the
// tenant's keys. Run under the tenant's advisory lock, in a statement that starts after the lock is granted, so
// its count sees every slot taken by an earlier holder of the lock: two replicas cannot both take the 10th slot.
// A slot names the key that took it ($2); the account is its key's tenant ($6).
const TAKE_SLOT = `
  WITH reclaimed AS (
    DELETE FROM chat_stream_slots
     WHERE key_id IN (SELECT id FROM api_keys WHERE tenant_id = $6::uuid) AND lease_expires_at <= now()
  )
  INSERT INTO chat_stream_slots (slot_id, key_id, holder, lease_expires_at)
  SELECT $1::uuid, $2::uuid, $3, now() + $4::int * interval '1 millisecond'
   WHERE (SELECT count(*) FROM chat_stream_slots s JOIN api_keys k ON k.id = s.key_id
           WHERE k.tenant_id = $6::uuid AND s.lease_expires_at > now()) < $5::int`;
/** What a refused client is told to wait: a stream's end cannot be predicted, so a short, fixed pause. */
const RETRY_AFTER_SECONDS = 5;

export interface ChatSlotOptions {
  pool: Pool;
  logger: Logger;
  maxConcurrent: number;
  leaseMs: number;
  heartbeatMs: number;
  /** How long a slot given back as `detached` stays taken (the reply runs on without its client). */
  detachedHoldMs: number;
}

export interface ChatSlots {
  acquire(principal: Principal): Promise<ReleaseChatSlot>;
  /** Stops renewing and gives back every slot this process still holds. */
  close(): Promise<void>;
}

/**
 * Concurrent chat requests per account (all of a tenant's keys), counted in chat_stream_slots so the limit holds
 * across replicas. A slot is a lease: this process renews all the slots it holds every `heartbeatMs`, and a slot
 * whose holder died (no renewal for `leaseMs`) is reclaimed by the next acquire or sweep.
 *
 * A slot stands for a reply that may be running, not for a connection: when the client leaves before the reply
 * ended, the chat service keeps the reply (and its model call) running for its detach grace, so the slot is not
 * deleted but left to expire `detachedHoldMs` later, in the database's clock. A client that connects and drops in
 * a loop therefore cannot have more replies running than the account's slots, on any number of replicas.
 */
export function createChatSlots({ pool, logger, maxConcurrent, leaseMs, heartbeatMs, detachedHoldMs }: ChatSlotOptions): ChatSlots {
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
          // on; it just no longer counts against the account.
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
          await client.query('SELECT pg_advisory_xact_lock($1::int, hashtext($2::text))', [CHAT_LOCK_CLASS, principal.tenantId]);
          const { rowCount } = await client.query(TAKE_SLOT, [slotId, principal.keyId, holder, leaseMs, limit, principal.tenantId]);
          return rowCount === 1;
        });
      } catch (error) {
        // Fail open, like the per-minute limits: an unreachable database must not also stop every chat.
        logger.warn({ err: error, tenantId: principal.tenantId }, 'could not take a chat slot; allowing the stream uncounted');
        return () => Promise.resolve();
      }
      if (!taken) {
        throw tooManyRequests(
          `Too many concurrent chat requests: this account may have ${limit} in flight at once, all of its API keys together (a reply whose client left keeps its slot for a few seconds while it stops). Close one and retry.`,
          RETRY_AFTER_SECONDS,
          { 'X-RateLimit-Limit': String(limit), 'X-RateLimit-Remaining': '0' },
        );
      }
      held.add(slotId);
      syncHeartbeat();
      let released = false;
      return async (how) => {
        if (released) return;
        released = true;
        held.delete(slotId);
        syncHeartbeat();
        try {
          if (how === 'ended') await pool.query('DELETE FROM chat_stream_slots WHERE slot_id = $1', [slotId]);
          else {
            // No longer renewed: it frees itself when the reply has surely stopped (reclaimed by acquire or sweep).
            await pool.query(
              `UPDATE chat_stream_slots SET lease_expires_at = now() + $2::int * interval '1 millisecond' WHERE slot_id = $1`,
              [slotId, detachedHoldMs],
            );
          }
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
