import { readFileSync } from 'node:fs';
import path from 'node:path';
import { getDMMF } from '@prisma/internals';
import { createTestDatabase, type TestDatabase } from '@fin/testing';
import pg from 'pg';

/**
 * schema.prisma and the migrated database must describe the same tables: every model is a table, every
 * scalar field a column of the matching type and nullability, and no table or column exists on only one side.
 */
interface Column {
  table: string;
  column: string;
  udtName: string;
  nullable: boolean;
}

// Prisma scalar (and native type) → Postgres udt_name. Arrays are "_" + element type.
function expectedUdt(type: string, nativeType: [string, string[]] | null | undefined): string {
  const native = nativeType?.[0];
  if (native === 'Uuid') return 'uuid';
  if (native === 'Timestamptz') return 'timestamptz';
  if (native === 'SmallInt') return 'int2';
  if (native === 'Date') return 'date';
  if (native) throw new Error(`Add a mapping for native type ${native}`);
  const byScalar: Record<string, string> = {
    String: 'text',
    Int: 'int4',
    BigInt: 'int8',
    Boolean: 'bool',
    Json: 'jsonb',
    Bytes: 'bytea',
    DateTime: 'timestamp',
    Float: 'float8',
  };
  const udt = byScalar[type];
  if (!udt) throw new Error(`Add a mapping for Prisma type ${type}`);
  return udt;
}

describe('schema.prisma agrees with the migrated database', () => {
  let db: TestDatabase;
  let columns: Column[];
  let models: Awaited<ReturnType<typeof getDMMF>>['datamodel']['models'];

  beforeAll(async () => {
    db = await createTestDatabase();
    const client = new pg.Client(db.url);
    await client.connect();
    try {
      const { rows } = await client.query<{ table_name: string; column_name: string; udt_name: string; is_nullable: string }>(
        `SELECT table_name, column_name, udt_name, is_nullable FROM information_schema.columns
          WHERE table_schema = 'public' AND table_name <> 'pgmigrations'`,
      );
      columns = rows.map((row) => ({
        table: row.table_name,
        column: row.column_name,
        udtName: row.udt_name,
        nullable: row.is_nullable === 'YES',
      }));
    } finally {
      await client.end();
    }
    const datamodel = readFileSync(path.join(__dirname, '../prisma/schema.prisma'), 'utf8');
    models = (await getDMMF({ datamodel })).datamodel.models;
  });
  afterAll(() => db.drop());

  it('maps every model to a table and every table to a model', () => {
    const tables = new Set(columns.map((column) => column.table));
    const modelTables = new Set(models.map((model) => model.dbName ?? model.name));
    expect([...modelTables].sort()).toEqual([...tables].sort());
  });

  it('has the same columns, types and nullability on both sides', () => {
    const fromPrisma = models.flatMap((model) =>
      model.fields
        .filter((field) => field.kind === 'scalar')
        .map((field) => ({
          table: model.dbName ?? model.name,
          column: field.dbName ?? field.name,
          udtName: (field.isList ? '_' : '') + expectedUdt(field.type, field.nativeType as [string, string[]] | null),
          nullable: !field.isRequired && !field.isList,
        })),
    );
    const key = (column: Column) => `${column.table}.${column.column}`;
    const sort = (list: Column[]) => [...list].sort((a, b) => key(a).localeCompare(key(b)));
    expect(sort(fromPrisma)).toEqual(sort(columns));
  });
});
