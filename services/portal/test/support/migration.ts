// Replays one migration on a test database that has it already: its Down section, then its Up section, in one
// transaction, as node-pg-migrate runs a SQL file. A test writes rows as they were before the migration, replays
// it, and sees what the migration made of them.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { MIGRATIONS_DIR, withTransaction, type Pool } from '@fin/db';

export async function replayMigration(pool: Pool, name: string): Promise<void> {
  const sql = readFileSync(path.join(MIGRATIONS_DIR, `${name}.sql`), 'utf8');
  const sections = /^-- Up Migration$([\s\S]*)^-- Down Migration$([\s\S]*)/m.exec(sql);
  if (sections === null) throw new Error(`${name}.sql has no Up and Down sections`);
  const [, up = '', down = ''] = sections;
  await withTransaction(pool, async (client) => {
    await client.query(down);
    await client.query(up);
  });
}
