export { databasePoolConfigShape, sessionPoolOf, type SessionPool } from './pool-config';
export { createPool, withTransaction, type Pool, type PoolClient, type PoolOptions, type Queryable } from './pool';
export { createPrismaClient, prismaFor, violatedUniqueIndex, Prisma, PrismaClient } from './prisma';
export { DatabaseNewerError, MIGRATIONS_DIR, ensureDatabase, knownMigrations, migrate } from './migrate';
export { addCounterHits, type CounterRow } from './counters';
export { listen, type Listener } from './listen';
export {
  LOCAL_DATABASE_FILE,
  NoDatabaseError,
  localDataDir,
  readLocalDatabase,
  recordLocalDatabase,
  repositoryRoot,
  resolveToolDatabase,
  type LocalDatabaseRecord,
  type ResolvedDatabase,
} from './local-database';
