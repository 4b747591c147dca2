// Prisma CLI configuration (Prisma 7). Only `prisma generate` is used: the schema is migrated by the SQL
// files in ./migrations, never by `prisma migrate`.
import { defineConfig } from 'prisma/config';

export default defineConfig({
  schema: 'prisma/schema.prisma',
  datasource: { url: process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/fin_api' },
});
