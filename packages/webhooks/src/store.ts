// Webhook endpoints, the account's callback secret and the deliveries as their owner sees them, always scoped to
// one tenant: another tenant's endpoint or delivery is not found, exactly as one that does not exist. Within the
// tenant, what a key may do is bounded by the products it may read (its `reach`, productsReadableWith its scopes):
// it sees only the deliveries of those products (and test events), and it may change, delete, test or rotate the
// secret of an endpoint only if the endpoint receives none beyond them (otherwise WebhookError 'forbidden'), so no
// key can point another key's endpoint, and the results queued for it, at a URL of its own. An endpoint's products
// therefore never shrink (a change sets them to the changing key's, which hold them all): every delivery queued
// for an endpoint is of a product whoever may change its URL may read, and queued deliveries follow the URL. Signing
// secrets are sealed with the customer-tools keyring before they reach SQL (signing needs the secret itself, so a
// hash would not do) and are returned only once, by the call that made them.
import { randomUUID } from 'node:crypto';
import type {
  JobType,
  Webhook,
  WebhookAttemptOutcome,
  WebhookCreateRequest,
  WebhookDelivery,
  WebhookEventType,
  WebhookUpdateRequest,
} from '@fin/contracts';
import { JobType as JobTypes, WEBHOOKS_MAX_PER_TENANT } from '@fin/contracts';
import type { AddressPolicy, Keyring, SealContext } from '@fin/customer-tools';
import { prismaFor, type Pool, type Prisma, type PrismaClient } from '@fin/db';
import { testEventBody } from './event-body';
import { newSigningSecret } from './signing';
import { unreachableTargetReason } from './target';

/** How long a rotated-out secret keeps signing beside the new one. */
const SECRET_ROTATION_OVERLAP_MS = 24 * 3600_000;
/** How long a delivery is retried before it fails. */
export const DEFAULT_RETRY_WINDOW_MS = 24 * 3600_000;
/** Why an endpoint is disabled when its account disabled it (the dispatcher gives its own reason). */
const DISABLED_BY_ACCOUNT = 'Disabled by the account.';
/** Attempts listed per delivery (the newest). */
const ATTEMPTS_LISTED = 50;

/** A refused change, with a detail fit for the client. The portal maps `kind` to 400 / 403 / 409. */
export class WebhookError extends Error {
  constructor(
    readonly kind: 'invalid' | 'forbidden' | 'conflict',
    readonly detail: string,
  ) {
    super(detail);
    this.name = 'WebhookError';
  }
}

/** Seal contexts: the additional data binds a sealed secret to its tenant and row (never a tool id: those are UUIDs). */
export function endpointSealContext(tenantId: string, endpointId: string): SealContext {
  return { tenantId, toolId: `webhook:${endpointId}` };
}
export function callbackSealContext(tenantId: string): SealContext {
  return { tenantId, toolId: 'webhook-callbacks' };
}

const ENDPOINT_FIELDS = {
  id: true,
  url: true,
  events: true,
  description: true,
  enabled: true,
  products: true,
  failingSince: true,
  disabledAt: true,
  disabledReason: true,
  createdAt: true,
  updatedAt: true,
} satisfies Prisma.WebhookEndpointSelect;
type EndpointRow = Prisma.WebhookEndpointGetPayload<{ select: typeof ENDPOINT_FIELDS }>;

function toApiWebhook(row: EndpointRow): Webhook {
  return {
    id: row.id,
    url: row.url,
    events: row.events as WebhookEventType[],
    description: row.description,
    enabled: row.enabled,
    products: row.products as JobType[],
    failing_since: row.failingSince?.toISOString() ?? null,
    disabled_at: row.disabledAt?.toISOString() ?? null,
    disabled_reason: row.disabledReason,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}

const DELIVERY_FIELDS = {
  id: true,
  endpointId: true,
  callbackUrl: true,
  eventType: true,
  jobId: true,
  jobType: true,
  status: true,
  attemptCount: true,
  nextAttemptAt: true,
  createdAt: true,
  attempts: {
    orderBy: [{ attemptedAt: 'desc' }, { id: 'asc' }],
    take: ATTEMPTS_LISTED,
    select: { attemptedAt: true, outcome: true, httpStatus: true, durationMs: true, error: true, responseExcerpt: true },
  },
} satisfies Prisma.WebhookDeliverySelect;
type DeliveryRow = Prisma.WebhookDeliveryGetPayload<{ select: typeof DELIVERY_FIELDS }>;

function toApiDelivery(row: DeliveryRow): WebhookDelivery {
  return {
    id: row.id,
    webhook_id: row.endpointId,
    callback_url: row.callbackUrl,
    event_type: row.eventType as WebhookDelivery['event_type'],
    job_id: row.jobId,
    job_type: row.jobType as WebhookDelivery['job_type'],
    status: row.status as WebhookDelivery['status'],
    attempt_count: row.attemptCount,
    next_attempt_at: row.nextAttemptAt?.toISOString() ?? null,
    created_at: row.createdAt.toISOString(),
    attempts: row.attempts.map((attempt) => ({
      attempted_at: attempt.attemptedAt.toISOString(),
      outcome: attempt.outcome as WebhookAttemptOutcome,
      http_status: attempt.httpStatus,
      duration_ms: attempt.durationMs,
      error: attempt.error,
      response_excerpt: attempt.responseExcerpt,
    })),
  };
}

/**
 * The products whose results a key with these scopes may read (a product's scope also reads its jobs): what an
 * endpoint it registers receives. The scopes of a product are named as the product.
 */
export function productsReadableWith(scopes: readonly string[]): JobType[] {
  return JobTypes.options.filter((product) => scopes.includes(product));
}

export interface RotatedSecret {
  secret: string;
  previous_secret_expires_at: string;
}

/**
 * The products the acting key may read (productsReadableWith its scopes). Every call below that acts on an endpoint
 * throws WebhookError 'forbidden' when the endpoint receives a product beyond it; null still means not the tenant's.
 */
export type Reach = readonly JobType[];

export interface WebhookStore {
  /** Every endpoint of the tenant (their settings hold no results): a key sees all, and may change those within its reach. */
  list(tenantId: string): Promise<Webhook[]>;
  get(tenantId: string, id: string): Promise<Webhook | null>;
  /**
   * The endpoint and its signing secret (shown once). `products`: those the registering key may read
   * (productsReadableWith its scopes); only their job events are delivered to it.
   */
  create(tenantId: string, request: WebhookCreateRequest, products: readonly JobType[]): Promise<Webhook & { secret: string }>;
  /**
   * Replaces the endpoint's settings and sets its products to the replacing key's (`products`, which must hold the
   * endpoint's: its reach); the secret is kept, and queued deliveries go to the new URL. Null: not the tenant's.
   */
  update(tenantId: string, id: string, request: WebhookUpdateRequest, products: Reach): Promise<Webhook | null>;
  delete(tenantId: string, id: string, reach: Reach): Promise<boolean>;
  rotateSecret(tenantId: string, id: string, reach: Reach): Promise<RotatedSecret | null>;
  /** Creates or rotates the secret callback_url deliveries of the tenant are signed with. */
  rotateCallbackSecret(tenantId: string): Promise<RotatedSecret>;
  /**
   * The most recent deliveries, newest first, of the tenant's endpoint `id` or, when `id` is null, of its
   * callback_urls, of the products in `reach` and test events only; optionally only those of one job. Null: not
   * the tenant's endpoint, or `jobId` not its job.
   */
  deliveries(tenantId: string, id: string | null, limit: number, reach: Reach, jobId?: string): Promise<WebhookDelivery[] | null>;
  /** Queues a webhook.test delivery. Null: not the tenant's endpoint. */
  queueTest(tenantId: string, id: string, reach: Reach): Promise<WebhookDelivery | null>;
  /**
   * Sends a delivery again now, with a new retry window. `id`: the endpoint, or null for a callback delivery.
   * Null: no such delivery of the tenant's endpoint (or callbacks) among those `reach` sees; 'in_flight': an
   * attempt is being made right now (the answer would race it).
   */
  redeliver(tenantId: string, id: string | null, deliveryId: string, reach: Reach): Promise<WebhookDelivery | 'in_flight' | null>;
}

export interface WebhookStoreOptions {
  pool: Pool;
  keyring: Keyring;
  /** Tests only: loopback URLs may be registered (see AddressPolicy). */
  addressPolicy?: AddressPolicy;
  maxPerTenant?: number;
  retryWindowMs?: number;
}

export function createWebhookStore({
  pool,
  keyring,
  addressPolicy = {},
  maxPerTenant = WEBHOOKS_MAX_PER_TENANT,
  retryWindowMs = DEFAULT_RETRY_WINDOW_MS,
}: WebhookStoreOptions): WebhookStore {
  const prisma: PrismaClient = prismaFor(pool);

  const checkUrl = (url: string) => {
    const reason = unreachableTargetReason(url, addressPolicy);
    if (reason !== null) throw new WebhookError('invalid', `url: ${reason}`);
  };

  const delivery = async (tenantId: string, endpointId: string | null, id: string) => {
    const row = await prisma.webhookDelivery.findFirst({ where: { tenantId, endpointId, id }, select: DELIVERY_FIELDS });
    return row === null ? null : toApiDelivery(row);
  };

  /**
   * Whether endpoint `id` is the tenant's (false: not found); throws 'forbidden' when it receives a product beyond
   * `reach`. The statement that then acts repeats the condition (products <@ reach), so a change made meanwhile by
   * a wider key cannot slip through.
   */
  const withinReach = async (tenantId: string, id: string, reach: Reach): Promise<boolean> => {
    const row = await prisma.webhookEndpoint.findFirst({ where: { tenantId, id }, select: { products: true } });
    if (row === null) return false;
    const beyond = row.products.filter((product) => !reach.includes(product as JobType));
    if (beyond.length > 0) {
      const named = beyond.length === 1 ? beyond.join('') : `${beyond.slice(0, -1).join(', ')} and ${beyond.at(-1) ?? ''}`;
      throw new WebhookError(
        'forbidden',
        `This endpoint receives ${named} results, which this API key may not read; ` +
          `change, test or delete it with a key that has the ${named} scope${beyond.length > 1 ? 's' : ''} too.`,
      );
    }
    return true;
  };
  /** After an acting statement matched nothing: throws if the endpoint was widened meanwhile; otherwise it is gone. */
  const gone = async (tenantId: string, id: string, reach: Reach): Promise<null> => {
    await withinReach(tenantId, id, reach);
    return null;
  };

  const rotation = () => ({ secret: newSigningSecret(), previousExpiresAt: new Date(Date.now() + SECRET_ROTATION_OVERLAP_MS) });

  return {
    async list(tenantId) {
      const rows = await prisma.webhookEndpoint.findMany({
        where: { tenantId },
        select: ENDPOINT_FIELDS,
        orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
      });
      return rows.map(toApiWebhook);
    },

    async get(tenantId, id) {
      const row = await prisma.webhookEndpoint.findFirst({ where: { tenantId, id }, select: ENDPOINT_FIELDS });
      return row === null ? null : toApiWebhook(row);
    },

    async create(tenantId, request, products) {
      checkUrl(request.url);
      const id = randomUUID();
      const secret = newSigningSecret();
      const sealed = keyring.seal(Buffer.from(secret, 'utf8'), endpointSealContext(tenantId, id));
      const row = await prisma.$transaction(async (tx) => {
        // Serialises creations per tenant, so two concurrent requests cannot both pass the cap.
        await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext('webhook_endpoints:' || ${tenantId}::text))`;
        if ((await tx.webhookEndpoint.count({ where: { tenantId } })) >= maxPerTenant)
          throw new WebhookError(
            'conflict',
            `This account already has ${maxPerTenant} webhook endpoints, the most allowed; delete one first.`,
          );
        return tx.webhookEndpoint.create({
          data: {
            id,
            tenantId,
            url: request.url,
            events: request.events,
            description: request.description,
            enabled: request.enabled,
            products: [...products],
            ...(request.enabled ? {} : { disabledAt: new Date(), disabledReason: DISABLED_BY_ACCOUNT }),
            secretCiphertext: sealed,
          },
          select: ENDPOINT_FIELDS,
        });
      });
      return { ...toApiWebhook(row), secret };
    },

    async update(tenantId, id, request, products) {
      checkUrl(request.url);
      if (!(await withinReach(tenantId, id, products))) return null;
      // Enabling clears the disabled state and the failure record (3 more days before it can be disabled again);
      // disabling an enabled endpoint records the account's reason, and an endpoint already disabled keeps its own.
      const rows = await prisma.$queryRaw<{ id: string }[]>`
        UPDATE webhook_endpoints SET url = ${request.url}, events = ${request.events}::text[], description = ${request.description},
               products = ${[...products]}::text[], enabled = ${request.enabled},
               failing_since = CASE WHEN ${request.enabled} AND NOT enabled THEN NULL ELSE failing_since END,
               disabled_at = CASE WHEN ${request.enabled} THEN NULL WHEN enabled THEN now() ELSE disabled_at END,
               disabled_reason = CASE WHEN ${request.enabled} THEN NULL WHEN enabled THEN ${DISABLED_BY_ACCOUNT} ELSE disabled_reason END,
               updated_at = now()
         WHERE tenant_id = ${tenantId}::uuid AND id = ${id}::uuid AND products <@ ${[...products]}::text[] RETURNING id`;
      if (rows.length === 0) return gone(tenantId, id, products);
      return this.get(tenantId, id);
    },

    async delete(tenantId, id, reach) {
      if (!(await withinReach(tenantId, id, reach))) return false;
      const deleted = await prisma.$executeRaw`
        DELETE FROM webhook_endpoints WHERE tenant_id = ${tenantId}::uuid AND id = ${id}::uuid AND products <@ ${[...reach]}::text[]`;
      if (deleted === 0) await gone(tenantId, id, reach);
      return deleted > 0;
    },

    async rotateSecret(tenantId, id, reach) {
      if (!(await withinReach(tenantId, id, reach))) return null;
      const { secret, previousExpiresAt } = rotation();
      const sealed = keyring.seal(Buffer.from(secret, 'utf8'), endpointSealContext(tenantId, id));
      // The current secret becomes the previous one in the same statement: a concurrent rotation cannot lose it.
      const rows = await prisma.$queryRaw<{ id: string }[]>`
        UPDATE webhook_endpoints SET previous_secret_ciphertext = secret_ciphertext, previous_secret_expires_at = ${previousExpiresAt},
               secret_ciphertext = ${sealed}, updated_at = now()
         WHERE tenant_id = ${tenantId}::uuid AND id = ${id}::uuid AND products <@ ${[...reach]}::text[] RETURNING id`;
      if (rows.length === 0) return gone(tenantId, id, reach);
      return { secret, previous_secret_expires_at: previousExpiresAt.toISOString() };
    },

    async rotateCallbackSecret(tenantId) {
      const { secret, previousExpiresAt } = rotation();
      const sealed = keyring.seal(Buffer.from(secret, 'utf8'), callbackSealContext(tenantId));
      await prisma.$executeRaw`
        INSERT INTO webhook_callback_secrets (tenant_id, secret_ciphertext) VALUES (${tenantId}::uuid, ${sealed})
        ON CONFLICT (tenant_id) DO UPDATE SET previous_secret_ciphertext = webhook_callback_secrets.secret_ciphertext,
               previous_secret_expires_at = ${previousExpiresAt}, secret_ciphertext = EXCLUDED.secret_ciphertext, updated_at = now()`;
      return { secret, previous_secret_expires_at: previousExpiresAt.toISOString() };
    },

    async deliveries(tenantId, id, limit, reach, jobId) {
      if (id !== null && (await prisma.webhookEndpoint.count({ where: { tenantId, id } })) === 0) return null;
      if (jobId !== undefined && (await prisma.job.count({ where: { tenantId, id: jobId } })) === 0) return null;
      const rows = await prisma.webhookDelivery.findMany({
        where: {
          tenantId,
          endpointId: id,
          // Test events (no job) and the jobs of the products the key may read.
          OR: [{ jobType: null }, { jobType: { in: [...reach] } }],
          ...(jobId === undefined ? {} : { jobId }),
        },
        select: DELIVERY_FIELDS,
        orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
        take: limit,
      });
      return rows.map(toApiDelivery);
    },

    async queueTest(tenantId, id, reach) {
      if (!(await withinReach(tenantId, id, reach))) return null;
      const deliveryId = randomUUID();
      const rows = await prisma.$queryRaw<{ id: string }[]>`
        INSERT INTO webhook_deliveries (id, tenant_id, endpoint_id, event_key, event_type, body, give_up_at)
        SELECT ${deliveryId}::uuid, tenant_id, id, ${`test:${deliveryId}`}, 'webhook.test', ${testEventBody(new Date())},
               now() + ${retryWindowMs} * interval '1 millisecond'
          FROM webhook_endpoints WHERE tenant_id = ${tenantId}::uuid AND id = ${id}::uuid AND products <@ ${[...reach]}::text[]
        RETURNING id`;
      if (rows.length === 0) return gone(tenantId, id, reach);
      return delivery(tenantId, id, deliveryId);
    },

    async redeliver(tenantId, id, deliveryId, reach) {
      // Not while an attempt holds the lease: its outcome would overwrite this request's new schedule.
      const rows = await prisma.$queryRaw<{ id: string; leased: boolean }[]>`
        WITH target AS (
          SELECT id, lease_expires_at IS NOT NULL AND lease_expires_at > now() AS leased
            FROM webhook_deliveries WHERE tenant_id = ${tenantId}::uuid AND endpoint_id IS NOT DISTINCT FROM ${id}::uuid
                   AND id = ${deliveryId}::uuid AND (job_type IS NULL OR job_type = ANY (${[...reach]}::text[]))
             FOR UPDATE
        ), requeued AS (
          UPDATE webhook_deliveries d SET status = 'pending', next_attempt_at = now(),
                 give_up_at = now() + ${retryWindowMs} * interval '1 millisecond', updated_at = now()
            FROM target WHERE d.id = target.id AND NOT target.leased
        )
        SELECT id, leased FROM target`;
      const row = rows[0];
      if (row === undefined) return null;
      if (row.leased) return 'in_flight';
      return delivery(tenantId, id, deliveryId);
    },
  };
}

interface SealedRow {
  owner: 'webhook_endpoints' | 'webhook_callback_secrets';
  id: string;
  tenant_id: string;
  col: 'secret_ciphertext' | 'previous_secret_ciphertext';
  sealed: Buffer;
}

/**
 * Re-seals every webhook signing secret (current and previous, of endpoints and of callback secrets) that another
 * key sealed with the keyring's current key: the customer-tools key rotation covers them too (the portal's
 * `reencrypt`). Returns how many values it changed; 0 means the old key can go.
 */
export async function reencryptWebhookSecrets(pool: Pool, keyring: Keyring): Promise<number> {
  const { rows } = await pool.query<SealedRow>(
    `SELECT 'webhook_endpoints' AS owner, id::text AS id, tenant_id::text AS tenant_id, c.col, c.sealed
       FROM webhook_endpoints,
            LATERAL (VALUES ('secret_ciphertext', secret_ciphertext), ('previous_secret_ciphertext', previous_secret_ciphertext)) AS c (col, sealed)
      WHERE c.sealed IS NOT NULL
     UNION ALL
     SELECT 'webhook_callback_secrets', tenant_id::text, tenant_id::text, c.col, c.sealed
       FROM webhook_callback_secrets,
            LATERAL (VALUES ('secret_ciphertext', secret_ciphertext), ('previous_secret_ciphertext', previous_secret_ciphertext)) AS c (col, sealed)
      WHERE c.sealed IS NOT NULL`,
  );
  let changed = 0;
  for (const row of rows) {
    if (keyring.keyIdOf(row.sealed) === keyring.current.id) continue;
    const context = row.owner === 'webhook_endpoints' ? endpointSealContext(row.tenant_id, row.id) : callbackSealContext(row.tenant_id);
    const resealed = keyring.seal(keyring.open(row.sealed, context), context);
    const key = row.owner === 'webhook_endpoints' ? 'id' : 'tenant_id';
    // Only if nobody rotated the secret meanwhile; a rotation has sealed with the current key anyway.
    const { rowCount } = await pool.query(`UPDATE ${row.owner} SET ${row.col} = $1 WHERE ${key} = $2 AND ${row.col} = $3`, [
      resealed,
      row.id,
      row.sealed,
    ]);
    changed += rowCount ?? 0;
  }
  return changed;
}
