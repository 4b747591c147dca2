import pg from 'pg';
import { createTestDatabase, type TestDatabase } from '../src';

describe('createTestDatabase', () => {
  let first: TestDatabase;
  let second: TestDatabase;

  beforeAll(async () => {
    [first, second] = await Promise.all([createTestDatabase(), createTestDatabase()]);
  });
  afterAll(async () => {
    await Promise.all([first.drop(), second.drop()]);
  });

  it('gives each caller its own migrated database', async () => {
    expect(first.name).not.toBe(second.name);
    const client = new pg.Client(first.url);
    await client.connect();
    try {
      await client.query("INSERT INTO tenants (name) VALUES ('only-in-first')");
      const { rows } = await client.query<{ n: string }>('SELECT count(*) AS n FROM pgmigrations');
      expect(Number(rows[0]?.n)).toBeGreaterThan(0);
    } finally {
      await client.end();
    }
    const other = new pg.Client(second.url);
    await other.connect();
    try {
      const { rowCount } = await other.query("SELECT 1 FROM tenants WHERE name = 'only-in-first'");
      expect(rowCount).toBe(0);
    } finally {
      await other.end();
    }
  });

  it('drops the database', async () => {
    const db = await createTestDatabase();
    await db.drop();
    const client = new pg.Client(first.url);
    await client.connect();
    try {
      const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [db.name]);
      expect(rowCount).toBe(0);
    } finally {
      await client.end();
    }
  });
});
