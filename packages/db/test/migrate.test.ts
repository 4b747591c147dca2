import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createEmptyDatabase, runMigrationCommand, type TestDatabase } from '@fin/testing';
import pg from 'pg';
import { createPool, createPrismaClient, ensureDatabase, knownMigrations } from '../src';

describe('migrations', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createEmptyDatabase();
  });
  afterAll(() => db.drop());

  async function query<T extends pg.QueryResultRow>(sql: string, params: unknown[] = []): Promise<T[]> {
    const client = new pg.Client(db.url);
    await client.connect();
    try {
      return (await client.query<T>(sql, params)).rows;
    } finally {
      await client.end();
    }
  }

  it('apply on an empty database, then find nothing to do on a second run', async () => {
    const first = await runMigrationCommand(db.url);
    expect(first.output).toContain(`applied ${knownMigrations().join(', ')}`);
    expect(first.code).toBe(0);
    const second = await runMigrationCommand(db.url);
    expect(second.output).toContain('already up to date');
    expect(second.code).toBe(0);
    const applied = await query<{ name: string }>('SELECT name FROM pgmigrations ORDER BY run_on');
    expect(applied.map((row) => row.name)).toEqual(knownMigrations());
  });

  it('refuse a database migrated by a newer version', async () => {
    await query("INSERT INTO pgmigrations (name, run_on) VALUES ('9999999999999_from-the-future', now())");
    try {
      const run = await runMigrationCommand(db.url);
      expect(run.code).not.toBe(0);
      expect(run.output).toContain('9999999999999_from-the-future');
      expect(run.output).toContain('migrated by a newer version');
    } finally {
      await query("DELETE FROM pgmigrations WHERE name = '9999999999999_from-the-future'");
    }
  });

  it('create a missing database once, however many processes ask at the same time', async () => {
    // As `npm run dev` does for each service started in its own terminal.
    const url = new URL(db.url);
    url.pathname = `/${db.name}_new`;
    try {
      const created = await Promise.all(Array.from({ length: 4 }, () => ensureDatabase(url.toString())));
      expect(created.filter(Boolean)).toHaveLength(1);
      expect(await ensureDatabase(url.toString())).toBe(false);
    } finally {
      await query(`DROP DATABASE IF EXISTS "${db.name}_new" WITH (FORCE)`);
    }
  });

  it('migrate once when several processes start at the same time, the others waiting for it', async () => {
    const fresh = await createEmptyDatabase();
    try {
      const runs = await Promise.all(Array.from({ length: 3 }, () => runMigrationCommand(fresh.url)));
      expect(runs.map((run) => run.code)).toEqual([0, 0, 0]);
      expect(runs.filter((run) => run.output.includes('already up to date'))).toHaveLength(2);
    } finally {
      await fresh.drop();
    }
  });

  it('fail clearly without DATABASE_URL when npm start has not run (no database record in DATA_DIR)', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'fin-migrate-'));
    const before = process.env.DATA_DIR;
    process.env.DATA_DIR = dataDir;
    try {
      const run = await runMigrationCommand('');
      expect(run.code).toBe(1);
      expect(run.output).toContain('[migrate] no database: DATABASE_URL is not set and npm start has not run here.');
    } finally {
      if (before === undefined) delete process.env.DATA_DIR;
      else process.env.DATA_DIR = before;
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('fail with the configuration error for a malformed DATABASE_URL', async () => {
    const run = await runMigrationCommand('mysql://root@127.0.0.1/fin');
    expect(run.code).toBe(78);
    expect(run.output).toContain('DATABASE_URL: expected a postgres or postgresql URL');
  });

  it('enforce the invariants the application relies on', async () => {
    const [tenant] = await query<{ id: string }>("INSERT INTO tenants (name) VALUES ('acme') RETURNING id");
    const insertJob = (id: string, status: string, extra = '') =>
      query(
        `INSERT INTO jobs (id, tenant_id, type, status, request, cache_key${extra ? ', result' : ''})
         VALUES ($1, $2, 'news', $3, '{}', 'news:AAPL'${extra ? `, '${extra}'` : ''})`,
        [id, tenant?.id, status],
      );
    await insertJob('00000000-0000-4000-8000-000000000001', 'pending');
    // A second unfinished job for the same cache key is refused: identical requests share one job.
    await expect(insertJob('00000000-0000-4000-8000-000000000002', 'running')).rejects.toThrow(/jobs_inflight_cache_key_idx/);
    // A completed job must carry its result.
    await expect(insertJob('00000000-0000-4000-8000-000000000003', 'completed')).rejects.toThrow(/jobs_result_when_completed/);
    await insertJob('00000000-0000-4000-8000-000000000004', 'completed', '{"news": []}');
    await expect(query("UPDATE jobs SET progress = 101 WHERE id = '00000000-0000-4000-8000-000000000001'")).rejects.toThrow(
      /check constraint/,
    );
  });

  it('serve the typed Prisma client', async () => {
    const pool = createPool({ connectionString: db.url, applicationName: 'prisma-test', max: 2 });
    const prisma = createPrismaClient(pool);
    try {
      const tenant = await prisma.tenant.create({ data: { name: 'prisma-tenant' } });
      const key = await prisma.apiKey.create({
        data: {
          tenantId: tenant.id,
          displayPrefix: 'fin_test_abcd',
          keyHash: new Uint8Array(32).fill(7),
          scopes: ['news', 'chat'],
        },
      });
      const found = await prisma.apiKey.findUniqueOrThrow({ where: { id: key.id }, include: { tenant: true } });
      expect(found.tenant.name).toBe('prisma-tenant');
      expect(found.scopes).toEqual(['news', 'chat']);
      expect(Buffer.from(found.keyHash)).toEqual(Buffer.alloc(32, 7));
    } finally {
      await prisma.$disconnect();
      await pool.end();
    }
  });
});
