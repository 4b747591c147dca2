// Tenants (the accounts that hold API keys) and their limit overrides. Every change that matters to a running
// gateway (disabling, overrides) reaches the replicas' key caches through the database's api_key_changed
// triggers, which NOTIFY on commit whichever client wrote the row.
import { prismaFor, violatedUniqueIndex, type Pool, type Prisma, type PrismaClient } from '@fin/db';
import { KeyStoreError } from './errors';
import {
  DAILY_TOKEN_BUDGET_LIMIT,
  DEFAULT_CHAT_CONCURRENCY,
  DEFAULT_LIMITS,
  OVERRIDABLE_LIMITS,
  parseLimitOverrides,
  type OverridableLimit,
} from './limits';

/** A client of the key store's queries: the pool's Prisma client, or one of its interactive transactions. */
export type Db = PrismaClient | Prisma.TransactionClient;

/** A tenant by name (what operators type) or by id (what a signed-in portal session knows). */
export type TenantRef = string | { id: string };

export interface TenantInfo {
  id: string;
  name: string;
  createdAt: Date;
  disabledAt: Date | null;
  limitOverrides: Record<string, number>;
  /** Keys neither revoked nor expired (they work while the tenant is enabled). */
  activeKeys: number;
}

// Letters, digits and . _ - : safe in a shell argument, a log line and a header.
const TENANT_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;
const MAX_PER_MINUTE = 1_000_000;
/** An account's concurrent chat requests at most (all of its keys together). */
const MAX_CHAT_STREAMS = 10_000;
/** A daily token budget above this is no budget. */
const MAX_DAILY_TOKENS = 1_000_000_000_000;

/** Keys that can still be used as of `now`: neither revoked nor expired (the tenant's own state aside). */
export function usableKeys(now: Date) {
  return { revokedAt: null, OR: [{ expiresAt: null }, { expiresAt: { gt: now } }] } satisfies Prisma.ApiKeyWhereInput;
}

export function tenantWhere(tenant: TenantRef): Prisma.TenantWhereUniqueInput {
  return typeof tenant === 'string' ? { name: tenant } : { id: tenant.id };
}

function noSuchTenant(tenant: TenantRef): KeyStoreError {
  return new KeyStoreError('not_found', typeof tenant === 'string' ? `No tenant named "${tenant}".` : `No tenant with id ${tenant.id}.`);
}

function tenantFields(now: Date) {
  return {
    id: true,
    name: true,
    createdAt: true,
    disabledAt: true,
    rateLimitOverrides: true,
    _count: { select: { apiKeys: { where: usableKeys(now) } } },
  } satisfies Prisma.TenantSelect;
}

type TenantRow = Prisma.TenantGetPayload<{ select: ReturnType<typeof tenantFields> }>;

function toTenant(row: TenantRow): TenantInfo {
  return {
    id: row.id,
    name: row.name,
    createdAt: row.createdAt,
    disabledAt: row.disabledAt,
    limitOverrides: parseLimitOverrides(row.rateLimitOverrides),
    activeKeys: row._count.apiKeys,
  };
}

/** The tenant, or KeyStoreError `not_found`. */
export async function findTenant(db: Db, tenant: TenantRef): Promise<TenantInfo> {
  const row = await db.tenant.findUnique({ where: tenantWhere(tenant), select: tenantFields(new Date()) });
  if (row === null) throw noSuchTenant(tenant);
  return toTenant(row);
}

function checkTenantName(name: string): void {
  if (!TENANT_NAME.test(name)) {
    throw new KeyStoreError(
      'invalid',
      `"${name}" is not a valid tenant name: use 1–100 letters, digits, ".", "_" or "-", starting with a letter or digit.`,
    );
  }
}

export async function createTenant(pool: Pool, name: string): Promise<TenantInfo> {
  checkTenantName(name);
  try {
    const row = await prismaFor(pool).tenant.create({ data: { name }, select: tenantFields(new Date()) });
    return toTenant(row);
  } catch (error) {
    if (violatedUniqueIndex(error) !== null) throw new KeyStoreError('conflict', `A tenant named "${name}" already exists.`);
    throw error;
  }
}

export async function listTenants(pool: Pool): Promise<TenantInfo[]> {
  const rows = await prismaFor(pool).tenant.findMany({ select: tenantFields(new Date()), orderBy: { name: 'asc' } });
  return rows.map(toTenant);
}

async function setDisabled(pool: Pool, name: string, disabled: boolean): Promise<TenantInfo> {
  const prisma = prismaFor(pool);
  // Only a tenant whose state changes is written: disabling again keeps the first disabled_at.
  await prisma.tenant.updateMany({
    where: { name, disabledAt: disabled ? null : { not: null } },
    data: { disabledAt: disabled ? new Date() : null },
  });
  return findTenant(prisma, name);
}

/** Every key of the tenant stops working at once (401 on every replica within moments); keys stay listed. */
export function disableTenant(pool: Pool, name: string): Promise<TenantInfo> {
  return setDisabled(pool, name, true);
}

export function enableTenant(pool: Pool, name: string): Promise<TenantInfo> {
  return setDisabled(pool, name, false);
}

function checkLimit(product: string): asserts product is OverridableLimit {
  if (!(OVERRIDABLE_LIMITS as readonly string[]).includes(product)) {
    throw new KeyStoreError('invalid', `Unknown product "${product}"; limits exist for ${OVERRIDABLE_LIMITS.join(', ')}.`);
  }
}

/**
 * Sets (or with null, removes) a tenant's limit for one product: requests per minute for the account (all of its
 * keys together), or for `chat` concurrent chat requests for the account. Gateways apply it within moments (the
 * change evicts the tenant's cached keys).
 */
export async function setLimitOverride(pool: Pool, tenant: string, product: string, value: number | null): Promise<Record<string, number>> {
  checkLimit(product);
  const max = product === 'chat' ? MAX_CHAT_STREAMS : product === DAILY_TOKEN_BUDGET_LIMIT ? MAX_DAILY_TOKENS : MAX_PER_MINUTE;
  if (value !== null && (!Number.isInteger(value) || value < 1 || value > max)) {
    throw new KeyStoreError('invalid', `The limit must be a whole number from 1 to ${max.toLocaleString('en')}.`);
  }
  // SQL through Prisma: the jsonb merge or removal of one entry is one atomic statement, where the typed API
  // would need a read-modify-write under a row lock.
  const prisma = prismaFor(pool);
  const rows =
    value === null
      ? await prisma.$queryRaw<{ rate_limit_overrides: unknown }[]>`
          UPDATE tenants SET rate_limit_overrides = rate_limit_overrides - ${product}::text
           WHERE name = ${tenant} RETURNING rate_limit_overrides`
      : await prisma.$queryRaw<{ rate_limit_overrides: unknown }[]>`
          UPDATE tenants SET rate_limit_overrides = rate_limit_overrides || jsonb_build_object(${product}::text, ${value}::bigint)
           WHERE name = ${tenant} RETURNING rate_limit_overrides`;
  if (!rows[0]) throw noSuchTenant(tenant);
  return parseLimitOverrides(rows[0].rate_limit_overrides);
}

/** Removes all of a tenant's overrides: the defaults apply again. */
export async function clearLimitOverrides(pool: Pool, tenant: string): Promise<void> {
  const { count } = await prismaFor(pool).tenant.updateMany({ where: { name: tenant }, data: { rateLimitOverrides: {} } });
  if (count === 0) throw noSuchTenant(tenant);
}

export interface LimitsReport {
  /** Built-in defaults: requests per account per minute, and `chat` concurrent chat requests per account. */
  defaults: Record<Exclude<OverridableLimit, typeof DAILY_TOKEN_BUDGET_LIMIT>, number>;
  /** Tenants with at least one override (or the one asked for). */
  tenants: { name: string; overrides: Record<string, number> }[];
}

export async function showLimits(pool: Pool, tenant?: string): Promise<LimitsReport> {
  const defaults = { ...DEFAULT_LIMITS, chat: DEFAULT_CHAT_CONCURRENCY };
  const prisma = prismaFor(pool);
  if (tenant !== undefined) {
    const found = await findTenant(prisma, tenant);
    return { defaults, tenants: [{ name: found.name, overrides: found.limitOverrides }] };
  }
  const rows = await prisma.tenant.findMany({
    where: { NOT: { rateLimitOverrides: { equals: {} } } },
    select: { name: true, rateLimitOverrides: true },
    orderBy: { name: 'asc' },
  });
  return { defaults, tenants: rows.map((row) => ({ name: row.name, overrides: parseLimitOverrides(row.rateLimitOverrides) })) };
}
