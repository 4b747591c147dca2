export { createPool, withTransaction, type Pool, type PoolClient, type PoolOptions, type Queryable } from './pool';
export { createPrismaClient, PrismaClient, type Prisma } from './prisma';
export { DatabaseNewerError, MIGRATIONS_DIR, ensureDatabase, knownMigrations, migrate } from './migrate';
export { addCounterHits, type CounterRow } from './counters';
