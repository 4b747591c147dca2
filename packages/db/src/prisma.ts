import { PrismaPg } from '@prisma/adapter-pg';
import type pg from 'pg';
import { PrismaClient } from './generated/prisma/client';

export { PrismaClient };
export type { Prisma } from './generated/prisma/client';

/** A Prisma client over an existing pg pool, so both share one set of connections. */
export function createPrismaClient(pool: pg.Pool): PrismaClient {
  return new PrismaClient({ adapter: new PrismaPg(pool) });
}
