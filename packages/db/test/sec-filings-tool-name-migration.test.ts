// 1765324800000_sec-filings-tool-name on a database that holds tools saved before it (`sec_filings` became one of
// the engine's own tools): migrated up to the migration before it, the tools written, then the real migration
// command applies the rest, as in reserved-tool-names-migration.test.ts.
import path from 'node:path';
import { createEmptyDatabase, runCommand, runMigrationCommand, type TestDatabase } from '@fin/testing';
import pg from 'pg';
import { MIGRATIONS_DIR, knownMigrations } from '../src';

const MIGRATION = '1765324800000_sec-filings-tool-name';

interface ToolRow {
  name: string;
  enabled: boolean;
  disabled_reason: string | null;
  changed: boolean;
}

describe(`migration ${MIGRATION}`, () => {
  let db: TestDatabase;
  let client: pg.Client;

  beforeAll(async () => {
    db = await createEmptyDatabase();
    const before = knownMigrations().indexOf(MIGRATION);
    expect(before).toBeGreaterThan(0);
    const script = `import { runner } from 'node-pg-migrate';
      await runner({ databaseUrl: process.env.DATABASE_URL, dir: ${JSON.stringify(MIGRATIONS_DIR)}, direction: 'up', count: ${before},
                     migrationsTable: 'pgmigrations', checkOrder: true, singleTransaction: true, log: () => undefined });`;
    const partial = await runCommand(process.execPath, ['--input-type=module', '-e', script], {
      cwd: path.dirname(MIGRATIONS_DIR),
      env: { ...process.env, DATABASE_URL: db.url },
    });
    expect(partial).toMatchObject({ code: 0 });
    client = new pg.Client(db.url);
    await client.connect();
  });

  afterAll(async () => {
    await client?.end();
    await db?.drop();
  });

  it('disables the tools named sec_filings, saying why; other names (other letter case too) are left alone', async () => {
    const tenant = await client.query<{ id: string }>("INSERT INTO tenants (name) VALUES ('acme') RETURNING id");
    await client.query(
      `INSERT INTO customer_tools (tenant_id, name, description, endpoint, input_schema, enabled, updated_at)
       SELECT $1, name, 'd', 'https://api.example.com/', '{"type": "object"}', enabled, now() - interval '1 day'
         FROM (VALUES ('sec_filings', true), ('SEC_Filings', true), ('get_filings', true)) AS t (name, enabled)`,
      [tenant.rows[0]?.id],
    );
    expect((await client.query('SELECT 1 FROM pgmigrations WHERE name = $1', [MIGRATION])).rowCount).toBe(0);

    const run = await runMigrationCommand(db.url);
    expect(run.code).toBe(0);
    expect(run.output).toContain(MIGRATION);

    const { rows } = await client.query<ToolRow>(
      "SELECT name, enabled, disabled_reason, updated_at > now() - interval '1 hour' AS changed FROM customer_tools ORDER BY name",
    );
    const reason = (name: string) =>
      `Disabled by the service: "${name}" is the name of one of the service's own tools, and the model cannot be offered two tools with one name (runs that offered this tool failed). Rename the tool to enable it again.`;
    expect(rows).toEqual([
      { name: 'SEC_Filings', enabled: true, disabled_reason: null, changed: false },
      { name: 'get_filings', enabled: true, disabled_reason: null, changed: false },
      { name: 'sec_filings', enabled: false, disabled_reason: reason('sec_filings'), changed: true },
    ]);
  });
});
