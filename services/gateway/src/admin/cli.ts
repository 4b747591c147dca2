#!/usr/bin/env node
/**
 * Operator CLI for tenants, API keys and limit overrides. From the repository root:
 *   npm run admin -- keys create --tenant acme --json
 * In a container: node services/gateway/dist/admin/cli.js <command>. See docs/operations.md.
 *
 * It parses arguments and prints results; every operation is the key store's (@fin/api-keys), the same functions
 * the portal uses. It ships in the gateway's image, so that operators find it where keys are checked.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { setFlagsFromString } from 'node:v8';
import {
  clearLimitOverrides,
  createKey,
  createTenant,
  DAILY_TOKEN_BUDGET_LIMIT,
  DEFAULT_LIMITS,
  disableTenant,
  enableTenant,
  KeyStoreError,
  listKeys,
  listTenants,
  parseScopes,
  revokeKey,
  setLimitOverride,
  showLimits,
  type KeyInfo,
  type TenantInfo,
} from '@fin/api-keys';
import { loadConfig, url } from '@fin/config';
import type { ApiScope } from '@fin/contracts';
import { createPool, NoDatabaseError, resolveToolDatabase, type Pool } from '@fin/db';

// A run is a statement or two: V8's optimising tier for the WebAssembly of Prisma's query compiler (compiled in
// background threads at the first query) would cost more CPU than the run itself. Set before that first query,
// which is when the module is compiled; the baseline tier alone runs it.
setFlagsFromString('--liftoff-only');

const EXIT_USAGE = 64;
const EXIT_FAILURE = 1;

const USAGE = `usage: admin <command> [options]

Tenants
  tenants create NAME
  tenants list [--json]
  tenants disable NAME            every key of the tenant stops working (401) within seconds
  tenants enable NAME

API keys (the key is shown once, at creation; only its SHA-256 is stored)
  keys create --tenant NAME [--scopes news,stock-report,analysis,chat,tools,webhooks,filings] [--name TEXT]
              [--expires-in 90d | --expires-at 2026-12-31T00:00:00Z] [--json]
  keys list [--tenant NAME] [--json]
  keys revoke ID|PREFIX|KEY       by key id, by display prefix (fin_xxxxxx) or by the key itself

Limits (per account: all of a tenant's keys count together)
  limits set --tenant NAME --product news|stock-report|analysis|jobs|tools|webhooks|chat-turns|filings --per-minute N
  limits set --tenant NAME --product chat --concurrent N
  limits set --tenant NAME --product daily-tokens --per-day N   model tokens per UTC day; past it, new work gets 429
  limits clear --tenant NAME [--product PRODUCT]     without --product: all of the tenant's overrides
  limits show [--tenant NAME] [--json]

Database: DATABASE_URL; when it is not set, the database of the npm start running from this checkout
(recorded in .data/database.json, or DATA_DIR/database.json), named on stderr.
Exit status: 0 done, 1 the operation failed, 64 usage error, 78 bad configuration.`;

class UsageError extends Error {}

type Options = NonNullable<ParseArgsConfig['options']>;
type Values = Record<string, string | boolean | undefined>;

function parse(args: string[], options: Options, positionals: number): { values: Values; positionals: string[] } {
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  if (parsed.positionals.length !== positionals) {
    throw new UsageError(
      parsed.positionals.length > positionals ? `Unexpected argument "${parsed.positionals[positionals]}".` : 'Missing argument.',
    );
  }
  return { values: parsed.values as Values, positionals: parsed.positionals };
}

function required(values: Values, name: string): string {
  const value = values[name];
  if (typeof value !== 'string' || value === '') throw new UsageError(`--${name} is required.`);
  return value;
}

function optional(values: Values, name: string): string | undefined {
  const value = values[name];
  return typeof value === 'string' ? value : undefined;
}

const DURATION_UNITS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** "30d", "12h", "90m", "2w" → a date that far from now. */
function expiryFrom(values: Values): Date | undefined {
  const expiresIn = optional(values, 'expires-in');
  const expiresAt = optional(values, 'expires-at');
  if (expiresIn !== undefined && expiresAt !== undefined) throw new UsageError('Give --expires-in or --expires-at, not both.');
  if (expiresIn !== undefined) {
    const match = /^(\d{1,6})([mhdw])$/.exec(expiresIn);
    if (!match || Number(match[1]) === 0)
      throw new UsageError(`--expires-in takes a number and a unit m, h, d or w (e.g. 30d), not "${expiresIn}".`);
    return new Date(Date.now() + Number(match[1]) * (DURATION_UNITS[match[2] as string] as number));
  }
  if (expiresAt !== undefined) {
    const date = new Date(expiresAt);
    if (!/^\d{4}-\d{2}-\d{2}/.test(expiresAt) || Number.isNaN(date.getTime())) {
      throw new UsageError(`--expires-at takes an ISO 8601 date or time (e.g. 2026-12-31T00:00:00Z), not "${expiresAt}".`);
    }
    return date;
  }
  return undefined;
}

function positiveInt(raw: string, flag: string): number {
  if (!/^\d+$/.test(raw)) throw new UsageError(`--${flag} takes a whole number, not "${raw}".`);
  return Number(raw);
}

const iso = (date: Date | null) => (date ? date.toISOString() : null);
const day = (date: Date | null, none = '-') => (date ? date.toISOString().replace(/\.\d{3}Z$/, 'Z') : none);

function table(header: string[], rows: string[][]): string {
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, column) => cell.padEnd(widths[column] ?? 0))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

function keyJson(key: KeyInfo) {
  return {
    id: key.id,
    tenant: key.tenant,
    name: key.name,
    display_prefix: key.displayPrefix,
    scopes: key.scopes,
    status: key.status,
    created_at: iso(key.createdAt),
    expires_at: iso(key.expiresAt),
    revoked_at: iso(key.revokedAt),
    last_used_at: iso(key.lastUsedAt),
  };
}

function tenantJson(tenant: TenantInfo) {
  return {
    id: tenant.id,
    name: tenant.name,
    status: tenant.disabledAt ? 'disabled' : 'active',
    active_keys: tenant.activeKeys,
    limit_overrides: tenant.limitOverrides,
    created_at: iso(tenant.createdAt),
    disabled_at: iso(tenant.disabledAt),
  };
}

const overridesText = (overrides: Record<string, number>) =>
  Object.entries(overrides)
    .map(([product, value]) => `${product}=${value}`)
    .join(' ') || '-';

interface Io {
  out(text: string): void;
  err(text: string): void;
}

async function tenants(pool: Pool, args: string[], io: Io): Promise<void> {
  const [action, ...rest] = args;
  switch (action) {
    case 'create': {
      const { positionals } = parse(rest, {}, 1);
      const tenant = await createTenant(pool, positionals[0] as string);
      io.out(`Created tenant ${tenant.name} (${tenant.id}).`);
      return;
    }
    case 'list': {
      const { values } = parse(rest, { json: { type: 'boolean' } }, 0);
      const all = await listTenants(pool);
      if (values.json) {
        io.out(JSON.stringify(all.map(tenantJson), null, 2));
        return;
      }
      if (all.length === 0) {
        io.out('No tenants. Create one with: admin tenants create NAME');
        return;
      }
      io.out(
        table(
          ['NAME', 'ID', 'STATUS', 'ACTIVE KEYS', 'LIMIT OVERRIDES', 'CREATED'],
          all.map((t) => [
            t.name,
            t.id,
            t.disabledAt ? 'disabled' : 'active',
            String(t.activeKeys),
            overridesText(t.limitOverrides),
            day(t.createdAt),
          ]),
        ),
      );
      return;
    }
    case 'disable':
    case 'enable': {
      const { positionals } = parse(rest, {}, 1);
      const name = positionals[0] as string;
      const tenant = action === 'disable' ? await disableTenant(pool, name) : await enableTenant(pool, name);
      io.out(
        action === 'disable'
          ? `Disabled tenant ${tenant.name}: its ${tenant.activeKeys} active key(s) are refused from now on.`
          : `Enabled tenant ${tenant.name}: its ${tenant.activeKeys} active key(s) work again.`,
      );
      return;
    }
    default:
      throw new UsageError(action ? `Unknown tenants command "${action}".` : 'tenants needs a command: create, list, disable or enable.');
  }
}

async function keys(pool: Pool, args: string[], io: Io): Promise<void> {
  const [action, ...rest] = args;
  switch (action) {
    case 'create': {
      const { values } = parse(
        rest,
        {
          tenant: { type: 'string' },
          scopes: { type: 'string' },
          name: { type: 'string' },
          'expires-in': { type: 'string' },
          'expires-at': { type: 'string' },
          json: { type: 'boolean' },
        },
        0,
      );
      const tenant = required(values, 'tenant');
      const scopesText = optional(values, 'scopes');
      let scopes: ApiScope[] | undefined;
      try {
        scopes = scopesText === undefined ? undefined : parseScopes(scopesText);
      } catch (error) {
        throw new UsageError((error as Error).message);
      }
      const expiresAt = expiryFrom(values);
      const { apiKey, key } = await createKey(pool, { tenant, scopes, name: optional(values, 'name'), expiresAt });
      if (values.json) {
        io.out(JSON.stringify({ api_key: apiKey, ...keyJson(key) }, null, 2));
        return;
      }
      io.out(`Created API key ${key.id} for tenant ${key.tenant}.`);
      io.out(`  prefix:  ${key.displayPrefix}`);
      io.out(`  scopes:  ${key.scopes.join(', ')}`);
      io.out(`  expires: ${day(key.expiresAt, 'never')}`);
      io.out('');
      io.out(`  ${apiKey}`);
      io.out('');
      io.err('This is the only time the key is shown: store it now. It cannot be recovered, only revoked and replaced.');
      return;
    }
    case 'list': {
      const { values } = parse(rest, { tenant: { type: 'string' }, json: { type: 'boolean' } }, 0);
      const all = await listKeys(pool, { tenant: optional(values, 'tenant') });
      if (values.json) {
        io.out(JSON.stringify(all.map(keyJson), null, 2));
        return;
      }
      if (all.length === 0) {
        io.out('No API keys.');
        return;
      }
      io.out(
        table(
          ['ID', 'TENANT', 'PREFIX', 'NAME', 'SCOPES', 'STATUS', 'CREATED', 'EXPIRES', 'LAST USED'],
          all.map((k) => [
            k.id,
            k.tenant,
            k.displayPrefix,
            k.name ?? '-',
            k.scopes.join(','),
            k.status,
            day(k.createdAt),
            day(k.expiresAt, 'never'),
            day(k.lastUsedAt, 'never'),
          ]),
        ),
      );
      return;
    }
    case 'revoke': {
      const { positionals } = parse(rest, {}, 1);
      const key = await revokeKey(pool, positionals[0] as string);
      io.out(
        `Revoked API key ${key.id} (${key.displayPrefix}, tenant ${key.tenant}) at ${day(key.revokedAt)}; gateways refuse it within seconds.`,
      );
      return;
    }
    default:
      throw new UsageError(action ? `Unknown keys command "${action}".` : 'keys needs a command: create, list or revoke.');
  }
}

async function limits(pool: Pool, args: string[], io: Io): Promise<void> {
  const [action, ...rest] = args;
  switch (action) {
    case 'set': {
      const { values } = parse(
        rest,
        {
          tenant: { type: 'string' },
          product: { type: 'string' },
          'per-minute': { type: 'string' },
          concurrent: { type: 'string' },
          'per-day': { type: 'string' },
        },
        0,
      );
      const tenant = required(values, 'tenant');
      const product = required(values, 'product');
      // Each limit has its unit: chat streams at once, model tokens per UTC day, otherwise requests per minute.
      const flags = { chat: 'concurrent', [DAILY_TOKEN_BUDGET_LIMIT]: 'per-day' } as const;
      const flag: 'concurrent' | 'per-day' | 'per-minute' = product in flags ? flags[product as keyof typeof flags] : 'per-minute';
      const units = { concurrent: ' concurrent streams', 'per-day': ' model tokens per UTC day', 'per-minute': ' requests per minute' };
      for (const other of ['concurrent', 'per-day', 'per-minute'] as const) {
        if (other !== flag && values[other] !== undefined) throw new UsageError(`${product} is limited in${units[flag]}: use --${flag} N.`);
      }
      const value = positiveInt(required(values, flag), flag);
      const overrides = await setLimitOverride(pool, tenant, product, value);
      io.out(`Tenant ${tenant}: ${product} limited to ${value}${units[flag]} for the account. Overrides now: ${overridesText(overrides)}.`);
      return;
    }
    case 'clear': {
      const { values } = parse(rest, { tenant: { type: 'string' }, product: { type: 'string' } }, 0);
      const tenant = required(values, 'tenant');
      const product = optional(values, 'product');
      if (product === undefined) {
        await clearLimitOverrides(pool, tenant);
        io.out(`Tenant ${tenant}: all limit overrides removed; the defaults apply.`);
      } else {
        const overrides = await setLimitOverride(pool, tenant, product, null);
        io.out(`Tenant ${tenant}: ${product} override removed. Overrides now: ${overridesText(overrides)}.`);
      }
      return;
    }
    case 'show': {
      const { values } = parse(rest, { tenant: { type: 'string' }, json: { type: 'boolean' } }, 0);
      const report = await showLimits(pool, optional(values, 'tenant'));
      if (values.json) {
        io.out(JSON.stringify(report, null, 2));
        return;
      }
      io.out('Defaults per account (all of its API keys together):');
      for (const product of Object.keys(DEFAULT_LIMITS)) {
        io.out(`  ${product.padEnd(13)} ${report.defaults[product as keyof typeof DEFAULT_LIMITS]} requests per minute`);
      }
      io.out(`  ${'chat'.padEnd(13)} ${report.defaults.chat} concurrent streams`);
      io.out(`  ${DAILY_TOKEN_BUDGET_LIMIT.padEnd(13)} none, unless the gateway's DAILY_TOKEN_BUDGET sets one (model tokens per UTC day)`);
      io.out('');
      if (report.tenants.length === 0) {
        io.out('No tenant has overrides.');
        return;
      }
      io.out(
        table(
          ['TENANT', 'OVERRIDES'],
          report.tenants.map((t) => [t.name, overridesText(t.overrides)]),
        ),
      );
      return;
    }
    default:
      throw new UsageError(action ? `Unknown limits command "${action}".` : 'limits needs a command: set, clear or show.');
  }
}

/**
 * Connection failures can arrive as an AggregateError with an empty message; fall back to the code. Prisma's
 * messages start with the call that failed: their last line says what happened.
 */
function explain(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = (error as { code?: string }).code;
  if (isPrismaError(error)) return error.message.trim().split('\n').at(-1) ?? error.name;
  return error.message || code || error.name;
}

const isPrismaError = (error: unknown) => error instanceof Error && error.name.startsWith('PrismaClient');

/**
 * Prisma names an unreachable or unmigrated database in its own terms. When one of its statements failed, a plain
 * query on the pool finds the driver's error (ECONNREFUSED, 42P01, a refused password), which is what an
 * operator searches for; when that query works, the failure was Prisma's own.
 */
async function driverError(pool: Pool, error: unknown): Promise<unknown> {
  if (!isPrismaError(error)) return error;
  try {
    await pool.query('SELECT FROM tenants, api_keys LIMIT 0');
    return error;
  } catch (probeError) {
    return probeError;
  }
}

const CONFIG = { DATABASE_URL: url(['postgres', 'postgresql']) };

async function main(argv: string[], io: Io): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h') || argv[0] === 'help') {
    io.out(USAGE);
    return 0;
  }
  const [group, ...args] = argv;
  const commands = { tenants, keys, limits } as const;
  if (group === undefined || !(group in commands)) {
    io.err(group === undefined ? USAGE : `admin: unknown command "${group}".\n\n${USAGE}`);
    return EXIT_USAGE;
  }
  let database;
  try {
    database = resolveToolDatabase();
  } catch (error) {
    if (!(error instanceof NoDatabaseError)) throw error;
    io.err(`admin: ${error.message}`);
    return EXIT_FAILURE;
  }
  // Without DATABASE_URL the user did not name the database: say which one this is.
  if (database.source !== 'DATABASE_URL') io.err(`admin: database ${database.description}`);
  const config = loadConfig(CONFIG, { DATABASE_URL: database.url });
  const pool = createPool({ connectionString: config.DATABASE_URL, applicationName: 'fin-admin', max: 1 });
  try {
    await commands[group as keyof typeof commands](pool, args, io);
    return 0;
  } catch (error) {
    if (error instanceof UsageError) {
      io.err(`admin: ${error.message}\nRun "admin --help" for usage.`);
      return EXIT_USAGE;
    }
    if (error instanceof KeyStoreError) {
      io.err(`admin: ${error.message}`);
      return EXIT_FAILURE;
    }
    const cause = await driverError(pool, error);
    const code = (cause as { code?: string }).code;
    const where = database.description;
    if (code === '42P01') io.err(`admin: the database at ${where} has not been migrated; run "npm run migrate" first.`);
    else io.err(`admin: failed against ${where}: ${explain(cause)}`);
    return EXIT_FAILURE;
  } finally {
    await pool.end();
  }
}

main(process.argv.slice(2), {
  out: (text) => process.stdout.write(`${text}\n`),
  err: (text) => process.stderr.write(`${text}\n`),
}).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`admin: ${explain(error)}\n`);
    process.exitCode = EXIT_FAILURE;
  },
);
