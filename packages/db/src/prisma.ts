import { PrismaPg } from '@prisma/adapter-pg';
import type pg from 'pg';
import { PrismaClient } from './generated/prisma/client';

export { PrismaClient };
export { Prisma } from './generated/prisma/client';

/** A Prisma client over an existing pg pool, so both share one set of connections. */
export function createPrismaClient(pool: pg.Pool): PrismaClient {
  return new PrismaClient({
    adapter: new PrismaPg(pool),
    // An interactive transaction waits for a connection as long as a pg query on the pool does (its
    // connectionTimeoutMillis), and is not cut short while it waits on a row or advisory lock.
    transactionOptions: { maxWait: 10_000, timeout: 30_000 },
  });
}

const clientsByPool = new WeakMap<pg.Pool, PrismaClient>();

/**
 * The Prisma client of a pool, made on its first use and the same one after: every store over one pool (one
 * process's, or the single-process system's shared one) shares one client, its compiled query plans and the
 * pool's connections. The client holds no connection of its own, so closing the pool is all a shutdown needs.
 */
export function prismaFor(pool: pg.Pool): PrismaClient {
  let client = clientsByPool.get(pool);
  if (client === undefined) {
    client = createPrismaClient(pool);
    clientsByPool.set(pool, client);
  }
  return client;
}

/**
 * The unique index a Prisma statement (model query or raw) violated, or null for any other error: a store turns
 * it into its own conflict, whatever the query's form.
 */
export function violatedUniqueIndex(error: unknown): string | null {
  const cause = (error as { meta?: { driverAdapterError?: { cause?: { kind?: string; constraint?: { index?: string } } } } } | null)?.meta
    ?.driverAdapterError?.cause;
  return cause?.kind === 'UniqueConstraintViolation' ? (cause.constraint?.index ?? '') : null;
}
