// Customer tools in Postgres, always scoped to one tenant: a query for another tenant's tool finds nothing, so the
// API answers 404 exactly as for a tool that does not exist. Header values are sealed before they reach SQL and
// only header names are ever read back for display.
import { randomUUID } from 'node:crypto';
import type { CustomerTool, CustomerToolCreateRequest, CustomerToolProduct, CustomerToolUpdateRequest } from '@fin/contracts';
import { withTransaction, type Pool, type Queryable } from '@fin/db';
import { inputSchemaProblems } from './input-schema';
import { openHeaders, sealHeaders, type Keyring } from './secrets';

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
  timeoutMs: number;
  products: CustomerToolProduct[];
  createdAt: Date;
  updatedAt: Date;
}

interface ToolRow {
  id: string;
  tenant_id: string;
  name: string;
  description: string;
  endpoint: string;
  method: 'GET' | 'POST';
  input_schema: Record<string, unknown>;
  header_names: string[];
  enabled: boolean;
  timeout_ms: number;
  products: CustomerToolProduct[];
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = 'id, tenant_id, name, description, endpoint, method, input_schema, header_names, enabled, timeout_ms, products, created_at, updated_at';

function toStored(row: ToolRow): StoredTool {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    name: row.name,
    description: row.description,
    endpoint: row.endpoint,
    method: row.method,
    inputSchema: row.input_schema,
    headerNames: row.header_names,
    enabled: row.enabled,
    timeoutMs: row.timeout_ms,
    products: row.products,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
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

function isUniqueViolation(error: unknown): boolean {
  return (error as { code?: string }).code === '23505';
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
  setEnabled(tenantId: string, id: string, enabled: boolean): Promise<StoredTool | null>;
  delete(tenantId: string, id: string): Promise<boolean>;
  /** The decrypted headers of a tool, for calling it; never shown or logged. */
  headersOf(tenantId: string, id: string): Promise<Record<string, string>>;
}

export interface ToolStoreOptions {
  pool: Pool;
  keyring: Keyring;
  maxToolsPerTenant?: number;
}

export function createToolStore({ pool, keyring, maxToolsPerTenant = DEFAULT_MAX_TOOLS_PER_TENANT }: ToolStoreOptions): ToolStore {
  const get = async (db: Queryable, tenantId: string, id: string): Promise<StoredTool | null> => {
    const { rows } = await db.query<ToolRow>(`SELECT ${COLUMNS} FROM customer_tools WHERE tenant_id = $1 AND id = $2`, [tenantId, id]);
    return rows[0] ? toStored(rows[0]) : null;
  };

  return {
    async list(tenantId) {
      const { rows } = await pool.query<ToolRow>(`SELECT ${COLUMNS} FROM customer_tools WHERE tenant_id = $1 ORDER BY created_at, id`, [tenantId]);
      return rows.map(toStored);
    },

    get: (tenantId, id) => get(pool, tenantId, id),

    async create(tenantId, request) {
      checkRequest(request);
      const id = randomUUID();
      const headers = request.headers ?? {};
      try {
        return await withTransaction(pool, async (client) => {
          // Serialises creations per tenant, so two concurrent requests cannot both pass the cap.
          await client.query("SELECT pg_advisory_xact_lock(hashtext('customer_tools:' || $1::text))", [tenantId]);
          const { rows: count } = await client.query<{ n: string }>('SELECT count(*) AS n FROM customer_tools WHERE tenant_id = $1', [tenantId]);
          if (Number(count[0]?.n ?? 0) >= maxToolsPerTenant) {
            throw new CustomerToolError('invalid', `name: this account already has ${maxToolsPerTenant} tools, the most allowed; delete one first`);
          }
          const { rows } = await client.query<ToolRow>(
            `INSERT INTO customer_tools (id, tenant_id, name, description, endpoint, method, input_schema, header_names, headers_ciphertext, enabled, timeout_ms, products)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING ${COLUMNS}`,
            [
              id,
              tenantId,
              request.name,
              request.description,
              request.endpoint,
              request.method,
              request.input_schema,
              Object.keys(headers),
              sealHeaders(keyring, headers, { tenantId, toolId: id }),
              request.enabled,
              request.timeout_ms,
              request.products,
            ],
          );
          return toStored(rows[0] as ToolRow);
        });
      } catch (error) {
        if (isUniqueViolation(error)) throw duplicate(request.name);
        throw error;
      }
    },

    async update(tenantId, id, request) {
      checkRequest(request);
      const headers = request.headers;
      try {
        return await withTransaction(pool, async (client) => {
          // Locked, so the origin compared is the one the headers were stored for, not one a concurrent update replaces.
          const { rows: current } = await client.query<{ endpoint: string; header_names: string[] }>(
            'SELECT endpoint, header_names FROM customer_tools WHERE tenant_id = $1 AND id = $2 FOR UPDATE',
            [tenantId, id],
          );
          const before = current[0];
          if (before === undefined) return null;
          if (headers === undefined && before.header_names.length > 0 && originOf(before.endpoint) !== originOf(request.endpoint)) {
            throw originChangedError(originOf(before.endpoint), originOf(request.endpoint));
          }
          const { rows } = await client.query<ToolRow>(
            `UPDATE customer_tools SET name = $3, description = $4, endpoint = $5, method = $6, input_schema = $7, enabled = $8,
                    timeout_ms = $9, products = $10, updated_at = now(),
                    header_names = CASE WHEN $11::boolean THEN $12::text[] ELSE header_names END,
                    headers_ciphertext = CASE WHEN $11::boolean THEN $13::bytea ELSE headers_ciphertext END
              WHERE tenant_id = $1 AND id = $2 RETURNING ${COLUMNS}`,
            [
              tenantId,
              id,
              request.name,
              request.description,
              request.endpoint,
              request.method,
              request.input_schema,
              request.enabled,
              request.timeout_ms,
              request.products,
              headers !== undefined,
              Object.keys(headers ?? {}),
              headers === undefined ? null : sealHeaders(keyring, headers, { tenantId, toolId: id }),
            ],
          );
          return rows[0] ? toStored(rows[0]) : null;
        });
      } catch (error) {
        if (isUniqueViolation(error)) throw duplicate(request.name);
        throw error;
      }
    },

    async setEnabled(tenantId, id, enabled) {
      const { rows } = await pool.query<ToolRow>(
        `UPDATE customer_tools SET enabled = $3, updated_at = now() WHERE tenant_id = $1 AND id = $2 RETURNING ${COLUMNS}`,
        [tenantId, id, enabled],
      );
      return rows[0] ? toStored(rows[0]) : null;
    },

    async delete(tenantId, id) {
      const { rowCount } = await pool.query('DELETE FROM customer_tools WHERE tenant_id = $1 AND id = $2', [tenantId, id]);
      return (rowCount ?? 0) > 0;
    },

    async headersOf(tenantId, id) {
      const { rows } = await pool.query<{ headers_ciphertext: Buffer | null }>(
        'SELECT headers_ciphertext FROM customer_tools WHERE tenant_id = $1 AND id = $2',
        [tenantId, id],
      );
      return openHeaders(keyring, rows[0]?.headers_ciphertext ?? null, { tenantId, toolId: id });
    },
  };
}

/**
 * Key rotation: re-seals every tool's headers that were sealed with a key other than the current one. Run it after
 * making a new key current (the old one still listed as previous); when it returns 0 the old key can be removed.
 * Returns how many tools were re-sealed.
 */
export async function reencryptToolSecrets(pool: Pool, keyring: Keyring): Promise<number> {
  const { rows } = await pool.query<{ id: string; tenant_id: string; headers_ciphertext: Buffer }>(
    'SELECT id, tenant_id, headers_ciphertext FROM customer_tools WHERE headers_ciphertext IS NOT NULL',
  );
  let changed = 0;
  for (const row of rows) {
    if (keyring.keyIdOf(row.headers_ciphertext) === keyring.current.id) continue;
    const context = { tenantId: row.tenant_id, toolId: row.id };
    const resealed = keyring.seal(keyring.open(row.headers_ciphertext, context), context);
    // Only if nobody changed the headers meanwhile; a concurrent update has sealed with the current key anyway.
    const { rowCount } = await pool.query('UPDATE customer_tools SET headers_ciphertext = $2 WHERE id = $1 AND headers_ciphertext = $3', [
      row.id,
      resealed,
      row.headers_ciphertext,
    ]);
    changed += rowCount ?? 0;
  }
  return changed;
}
