// Postgres CLIENT spans (@fin/tracing), when traces are exported: one per statement run inside a trace (a request,
// a consumed event, a job run), named by the statement's name or its first keyword (SELECT, INSERT, BEGIN …).
// The SQL text and its parameters are never recorded: they hold tenants' requests and results. Statements run
// outside any trace (polls, lease renewals) make no span. Without tracing the pool is pg's own, untouched.
import { currentTrace } from '@fin/log';
import { SpanKind, tracingEnabled, withSpan } from '@fin/tracing';
import type pg from 'pg';

type Query = (...args: unknown[]) => unknown;

const untraced = (): void => undefined;

const OPERATION = /^\s*([A-Za-z]+)/;

/** What a span is called: a named (prepared) statement's name, else the statement's first keyword. */
function operationOf(statement: unknown): string | undefined {
  if (typeof statement === 'string') return OPERATION.exec(statement)?.[1]?.toUpperCase();
  if (typeof statement !== 'object' || statement === null) return undefined;
  const { name, text, submit } = statement as { name?: unknown; text?: unknown; submit?: unknown };
  // A Submittable (a cursor, a stream) is returned as it is, not as a promise: left untraced.
  if (typeof submit === 'function') return undefined;
  if (typeof name === 'string') return name;
  return operationOf(text);
}

/** `query` wrapped in a span per promise-form call inside a trace; callback and streaming forms pass through. */
function traced(query: Query, database: string | undefined): Query {
  return (...args) => {
    const operation = operationOf(args[0]);
    if (operation === undefined || typeof args.at(-1) === 'function' || currentTrace() === undefined) return query(...args);
    return withSpan(
      operation,
      {
        kind: SpanKind.CLIENT,
        attributes: { 'db.system.name': 'postgresql', 'db.operation.name': operation, ...(database ? { 'db.namespace': database } : {}) },
      },
      () => query(...args) as Promise<unknown>,
    );
  };
}

/** Each pool's database name, read once from its URL (traceClient runs for every transaction). */
const databases = new WeakMap<pg.Pool, string | undefined>();

/** The database a pool connects to (for spans' db.namespace). */
function databaseOf(pool: pg.Pool): string | undefined {
  if (databases.has(pool)) return databases.get(pool);
  let database: string | undefined;
  try {
    const { connectionString } = pool.options;
    database = connectionString === undefined ? undefined : decodeURIComponent(new URL(connectionString).pathname.slice(1)) || undefined;
  } catch {
    database = undefined;
  }
  databases.set(pool, database);
  return database;
}

/** Traces `pool.query` when traces are exported. */
export function tracePool(pool: pg.Pool): void {
  if (!tracingEnabled()) return;
  pool.query = traced(pool.query.bind(pool), databaseOf(pool)) as pg.Pool['query'];
}

/** Traces a checked-out client's queries until the returned function is called (before it goes back to the pool). */
export function traceClient(client: pg.PoolClient, pool: pg.Pool): () => void {
  if (!tracingEnabled()) return untraced;
  const own = client as unknown as { query: Query };
  own.query = traced(client.query.bind(client), databaseOf(pool));
  return () => {
    delete (own as { query?: Query }).query;
  };
}
