export { databasePoolConfigShape, servicePool, sessionPoolOf } from './pool-config';
export { createPool, withTransaction, type Pool, type PoolClient, type Queryable } from './pool';
export { createPrismaClient, prismaFor, violatedUniqueIndex, Prisma, PrismaClient } from './prisma';
export { MIGRATIONS_DIR, ensureDatabase, knownMigrations, migrate } from './migrate';
export { addCounterHits, type CounterRow } from './counters';
export { listen, type Listener } from './listen';
export {
  LOCAL_DATABASE_FILE,
  NoDatabaseError,
  readLocalDatabase,
  recordLocalDatabase,
  repositoryRoot,
  resolveToolDatabase,
} from './local-database';
