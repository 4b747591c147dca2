// Customer tools in Postgres, always scoped to one tenant: a query for another tenant's tool finds nothing, so the
// API answers 404 exactly as for a tool that does not exist. Header values are sealed before they reach SQL and
// only header names are ever read back for display.
import { randomUUID } from 'node:crypto';
import {
  reservedToolNameProblem,
  type CustomerTool,
  type CustomerToolCreateRequest,
  type CustomerToolProduct,
  type CustomerToolUpdateRequest,
} from '@fin/contracts';
import { prismaFor, violatedUniqueIndex, type Pool, type Prisma, type PrismaClient } from '@fin/db';
import { inputSchemaProblems } from './input-schema';
import { openHeaders, sealHeaders, sealedBytes, type Keyring } from './secrets';

/** Per-tenant cap on registered tools; each tool's schema is capped at 16 KiB by the contract. */
export const DEFAULT_MAX_TOOLS_PER_TENANT = 50;

/** A refused change, with a detail fit for the client. The portal maps `kind` to 400 / 409. */
export class CustomerToolError extends Error {
  constructor(
    readonly kind: 'invalid' | 'conflict',
    readonly detail: string,
    /** Set for a refusal a form words its own way: the endpoint moved to another origin without new headers. */
    readonly reason?: 'origin_changed',
  ) {
    super(detail);
    this.name = 'CustomerToolError';
  }
}

export interface StoredTool {
  id: string;
  tenantId: string;
  name: string;
  description: string;
  endpoint: string;
  method: 'GET' | 'POST';
  inputSchema: Record<string, unknown>;
  headerNames: string[];
  enabled: boolean;
  /** Why the service disabled the tool (a name that became reserved); null otherwise. */
  disabledReason: string | null;
  timeoutMs: number;
  products: CustomerToolProduct[];
  createdAt: Date;
  updatedAt: Date;
}

/** The columns a StoredTool is made of: never the sealed headers. */
const TOOL_FIELDS = {
  id: true,
  tenantId: true,
  name: true,
  description: true,
  endpoint: true,
  method: true,
  inputSchema: true,
  headerNames: true,
  enabled: true,
  disabledReason: true,
  timeoutMs: true,
  products: true,
  createdAt: true,
  updatedAt: true,
} satisfies Prisma.CustomerToolSelect;

type ToolRow = Prisma.CustomerToolGetPayload<{ select: typeof TOOL_FIELDS }>;

/** The columns hold what the contract let in: a method, a JSON Schema object and product names. */
function toStored(row: ToolRow): StoredTool {
  return {
    ...row,
    method: row.method as StoredTool['method'],
    inputSchema: row.inputSchema as Record<string, unknown>,
    products: row.products as CustomerToolProduct[],
  };
}

/** The API representation: header names, never values. */
export function toApiTool(tool: StoredTool): CustomerTool {
  return {
    id: tool.id,
    name: tool.name,
    description: tool.description,
    endpoint: tool.endpoint,
    method: tool.method,
    input_schema: tool.inputSchema,
    header_names: tool.headerNames,
    enabled: tool.enabled,
    disabled_reason: tool.disabledReason,
    timeout_ms: tool.timeoutMs,
    products: tool.products,
    created_at: tool.createdAt.toISOString(),
    updated_at: tool.updatedAt.toISOString(),
  };
}

/** The checks zod cannot make: the input schema must be a JSON Schema Ajv compiles. */
function checkRequest(request: CustomerToolCreateRequest): void {
  const problems = inputSchemaProblems(request.input_schema);
  if (problems.length > 0) throw new CustomerToolError('invalid', problems.join('; ').slice(0, 500));
}

function isDuplicateName(error: unknown): boolean {
  return violatedUniqueIndex(error) === 'customer_tools_tenant_id_name_key';
}

const duplicate = (name: string) => new CustomerToolError('conflict', `name: a tool named "${name}" already exists`);

/** Scheme, host and port: where header secrets are sent. Endpoints passed the contract, so they parse. */
function originOf(endpoint: string): string {
  return new URL(endpoint).origin;
}

/**
 * Stored header values were given for one origin (an `Authorization` header is a credential for that API), so
 * they never follow the endpoint to another one: an update that moves the endpoint must say what to send there.
 */
function originChangedError(from: string, to: string): CustomerToolError {
  return new CustomerToolError(
    'invalid',
    `headers: the endpoint moves from ${from} to ${to}, and stored header values are never sent to another origin; send headers again (or {} for none)`,
    'origin_changed',
  );
}

export interface ToolStore {
  list(tenantId: string): Promise<StoredTool[]>;
  get(tenantId: string, id: string): Promise<StoredTool | null>;
  create(tenantId: string, request: CustomerToolCreateRequest): Promise<StoredTool>;
  /**
   * PUT semantics; omitted `headers` keeps the stored ones, unless the endpoint moves to another origin (then
   * `originChangedError`). Null when the tool is not the tenant's.
   */
  update(tenantId: string, id: string, request: CustomerToolUpdateRequest): Promise<StoredTool | null>;
  /** Enabling a tool whose name is reserved (saved before it was) is refused with the contract's 400 on `name`. */
  setEnabled(tenantId: string, id: string, enabled: boolean): Promise<StoredTool | null>;
  delete(tenantId: string, id: string): Promise<boolean>;
  /** The decrypted headers of a tool, for calling it; never shown or logged. */
  headersOf(tenantId: string, id: string): Promise<Record<string, string>>;
}

export interface ToolStoreOptions {
  /** The service's pool; the store's statements go through its Prisma client (`prismaFor`). */
  pool: Pool;
  keyring: Keyring;
  maxToolsPerTenant?: number;
}

/**
 * Stamps a tool's updated_at with the database's clock and locks its row for the transaction, returning what was
 * stored before (null: not the tenant's tool). SQL because Prisma writes a timestamp from the process's clock at
 * millisecond precision: the tool-set digest in cache keys reads updated_at to the microsecond, so two saves
 * within a millisecond would leave cached results of the older definition in use.
 */
async function stampUpdated(
  tx: Prisma.TransactionClient,
  tenantId: string,
  id: string,
): Promise<{ name: string; endpoint: string; header_names: string[] } | null> {
  const rows = await tx.$queryRaw<{ name: string; endpoint: string; header_names: string[] }[]>`
    UPDATE customer_tools SET updated_at = now() WHERE tenant_id = ${tenantId}::uuid AND id = ${id}::uuid RETURNING name, endpoint, header_names`;
  return rows[0] ?? null;
}

export function createToolStore({ pool, keyring, maxToolsPerTenant = DEFAULT_MAX_TOOLS_PER_TENANT }: ToolStoreOptions): ToolStore {
  const prisma: PrismaClient = prismaFor(pool);
  // Every statement names the tenant: another tenant's tool is not found, exactly as one that does not exist.
  return {
    async list(tenantId) {
      const rows = await prisma.customerTool.findMany({
        where: { tenantId },
        select: TOOL_FIELDS,
        orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
      });
      return rows.map(toStored);
    },

    async get(tenantId, id) {
      const row = await prisma.customerTool.findFirst({ where: { tenantId, id }, select: TOOL_FIELDS });
      return row === null ? null : toStored(row);
    },

    async create(tenantId, request) {
      checkRequest(request);
      const id = randomUUID();
      const headers = request.headers ?? {};
      try {
        return await prisma.$transaction(async (tx) => {
          // Serialises creations per tenant, so two concurrent requests cannot both pass the cap (Prisma has no advisory locks).
          await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext('customer_tools:' || ${tenantId}::text))`;
          if ((await tx.customerTool.count({ where: { tenantId } })) >= maxToolsPerTenant) {
            throw new CustomerToolError(
              'invalid',
              `name: this account already has ${maxToolsPerTenant} tools, the most allowed; delete one first`,
            );
          }
          // created_at and updated_at are the database's (the column defaults), as the digest needs.
          const row = await tx.customerTool.create({
            data: {
              id,
              tenantId,
              name: request.name,
              description: request.description,
              endpoint: request.endpoint,
              method: request.method,
              inputSchema: request.input_schema as Prisma.InputJsonObject,
              headerNames: Object.keys(headers),
              headersCiphertext: sealHeaders(keyring, headers, { tenantId, toolId: id }),
              enabled: request.enabled,
              timeoutMs: request.timeout_ms,
              products: request.products,
            },
            select: TOOL_FIELDS,
          });
          return toStored(row);
        });
      } catch (error) {
        if (isDuplicateName(error)) throw duplicate(request.name);
        throw error;
      }
    },

    async update(tenantId, id, request) {
      checkRequest(request);
      const headers = request.headers;
      try {
        return await prisma.$transaction(async (tx) => {
          // Locked, so the origin compared is the one the headers were stored for, not one a concurrent update replaces.
          const before = await stampUpdated(tx, tenantId, id);
          if (before === null) return null;
          if (headers === undefined && before.header_names.length > 0 && originOf(before.endpoint) !== originOf(request.endpoint)) {
            throw originChangedError(originOf(before.endpoint), originOf(request.endpoint));
          }
          const row = await tx.customerTool.update({
            where: { id, tenantId },
            data: {
              name: request.name,
              description: request.description,
              endpoint: request.endpoint,
              method: request.method,
              inputSchema: request.input_schema as Prisma.InputJsonObject,
              enabled: request.enabled,
              // The request passed today's rules (its name is not reserved): what the service disabled it for is gone.
              disabledReason: null,
              timeoutMs: request.timeout_ms,
              products: request.products,
              ...(headers === undefined
                ? {}
                : { headerNames: Object.keys(headers), headersCiphertext: sealHeaders(keyring, headers, { tenantId, toolId: id }) }),
            },
            select: TOOL_FIELDS,
          });
          return toStored(row);
        });
      } catch (error) {
        if (isDuplicateName(error)) throw duplicate(request.name);
        throw error;
      }
    },

    async setEnabled(tenantId, id, enabled) {
      return prisma.$transaction(async (tx) => {
        const before = await stampUpdated(tx, tenantId, id);
        if (before === null) return null;
        // A tool saved before its name was reserved: offered beside ours under that name, every run would fail.
        const reserved = enabled ? reservedToolNameProblem(before.name) : null;
        if (reserved !== null) throw new CustomerToolError('invalid', `name: ${reserved}`);
        return toStored(
          await tx.customerTool.update({
            where: { id, tenantId },
            data: enabled ? { enabled, disabledReason: null } : { enabled },
            select: TOOL_FIELDS,
          }),
        );
      });
    },

    async delete(tenantId, id) {
      const { count } = await prisma.customerTool.deleteMany({ where: { tenantId, id } });
      return count > 0;
    },

    async headersOf(tenantId, id) {
      const row = await prisma.customerTool.findFirst({ where: { tenantId, id }, select: { headersCiphertext: true } });
      return openHeaders(keyring, sealedBytes(row?.headersCiphertext ?? null), { tenantId, toolId: id });
    },
  };
}

/**
 * Key rotation: re-seals every tool's headers that were sealed with a key other than the current one. Run it after
 * making a new key current (the old one still listed as previous); when it returns 0 the old key can be removed.
 * Returns how many tools were re-sealed. updated_at is left alone: the tool's definition, and so the cached
 * results made with it, did not change.
 */
export async function reencryptToolSecrets(pool: Pool, keyring: Keyring): Promise<number> {
  const prisma = prismaFor(pool);
  const rows = await prisma.customerTool.findMany({
    where: { headersCiphertext: { not: null } },
    select: { id: true, tenantId: true, headersCiphertext: true },
  });
  let changed = 0;
  for (const row of rows) {
    const sealed = sealedBytes(row.headersCiphertext);
    if (sealed === null || keyring.keyIdOf(sealed) === keyring.current.id) continue;
    const context = { tenantId: row.tenantId, toolId: row.id };
    const resealed = keyring.seal(keyring.open(sealed, context), context);
    // Only if nobody changed the headers meanwhile; a concurrent update has sealed with the current key anyway.
    const { count } = await prisma.customerTool.updateMany({
      where: { id: row.id, headersCiphertext: row.headersCiphertext },
      data: { headersCiphertext: resealed },
    });
    changed += count;
  }
  return changed;
}
