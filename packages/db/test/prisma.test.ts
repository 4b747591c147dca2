// The Prisma client of a pool: one per pool, on the pool's own connections, and the unique index a failed
// statement violated, whether it was a model query or raw SQL.
import { createTestDatabase, type TestDatabase } from '@fin/testing';
import { createPool, prismaFor, violatedUniqueIndex, type Pool } from '../src';

describe('prismaFor', () => {
  let db: TestDatabase;
  let pool: Pool;

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = createPool({ connectionString: db.url, applicationName: 'prisma-for-test', max: 2 });
  });

  afterAll(async () => {
    await pool?.end();
    await db?.drop();
  });

  it('gives one client per pool, which queries over that pool', async () => {
    const other = createPool({ connectionString: db.url, applicationName: 'prisma-for-other', max: 1 });
    try {
      expect(prismaFor(pool)).toBe(prismaFor(pool));
      expect(prismaFor(other)).not.toBe(prismaFor(pool));
      const rows = await prismaFor(pool).$queryRaw<{ name: string }[]>`SELECT current_setting('application_name') AS name`;
      expect(rows).toEqual([{ name: 'prisma-for-test' }]);
      expect(pool.totalCount).toBeGreaterThan(0);
      expect(other.totalCount).toBe(0);
    } finally {
      await other.end();
    }
  });

  it('names the unique index a model query or a raw statement violated, and nothing for other errors', async () => {
    const prisma = prismaFor(pool);
    await prisma.tenant.create({ data: { name: 'taken' } });
    const fromModel = await prisma.tenant.create({ data: { name: 'taken' } }).catch((error: unknown) => error);
    const fromRaw = await prisma
      .$transaction(async (tx) => tx.$executeRaw`INSERT INTO tenants (name) VALUES ('taken')`)
      .catch((error: unknown) => error);
    const notUnique = await prisma.$executeRaw`INSERT INTO tenants (name) VALUES (NULL)`.catch((error: unknown) => error);
    expect(violatedUniqueIndex(fromModel)).toBe('tenants_name_key');
    expect(violatedUniqueIndex(fromRaw)).toBe('tenants_name_key');
    expect(notUnique).toBeInstanceOf(Error);
    expect(violatedUniqueIndex(notUnique)).toBeNull();
    expect(violatedUniqueIndex(new Error('other'))).toBeNull();
  });
});
