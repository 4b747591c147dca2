// crud-client: what the Prisma client costs beside pg with SQL, for the statements issue 17 weighed. Both run over
// one pool on a database of the run's own, driven in-process by one closed-loop client (each operation starts when
// the last one ended), so the figures are the client library's work plus one round trip, not contention:
//
// - the per-run tool load of customer tools (`@fin/customer-tools` runtime): every job and chat turn that may
//   offer customer tools runs it, and it reads the tenant's tools with their set's digest (the result cache key)
//   in one statement. Compared: that statement over pg (what the runtime sends), the same SQL through Prisma's
//   $queryRaw, and the model API's form (findMany, then the digest in a second statement, both in one
//   transaction so that they describe the same moment);
// - a portal read (a tool by id) and an audit write (one call recorded), which moved to the model API.
//
// Reported per row: operations per second, the runner's CPU per operation (the client library's share) and the
// latency (p50, p99).
import { randomUUID } from 'node:crypto';
import { createPool, prismaFor, type Pool, type PrismaClient } from '@fin/db';
import { createTestDatabase } from '@fin/testing';
import { ownCpuTime, totalMs } from '../lib/cpu';
import { percentiles } from '../lib/load';
import { describeMachine, formatMachine } from '../lib/machine';
import type { BenchOptions } from '../lib/options';
import { fixed, note, print, table, thousands } from '../lib/output';

const TOOLS = 5;
const PRODUCT = 'news';

const LOAD_SQL = `SELECT id, tenant_id AS "tenantId", name, description, endpoint, method, input_schema AS "inputSchema",
                         headers_ciphertext AS "headersCiphertext", timeout_ms AS "timeoutMs", customer_tool_set_digest($1, $2) AS tool_set
                    FROM customer_tools WHERE tenant_id = $1 AND enabled AND $2 = ANY (products) ORDER BY created_at, id`;

const LOAD_FIELDS = {
  id: true,
  tenantId: true,
  name: true,
  description: true,
  endpoint: true,
  method: true,
  inputSchema: true,
  headersCiphertext: true,
  timeoutMs: true,
} as const;

interface Operation {
  group: string;
  client: string;
  run(): Promise<unknown>;
}

interface Row {
  group: string;
  client: string;
  perS: number;
  cpuUs: number;
  p50: number;
  p99: number;
}

function operations(pool: Pool, prisma: PrismaClient, tenantId: string, toolId: string): Operation[] {
  const call = {
    tenantId,
    toolId,
    toolName: 'tool_0',
    source: 'job',
    product: PRODUCT,
    jobId: randomUUID(),
    outcome: 'ok',
    httpStatus: 200,
    durationMs: 12,
    responseBytes: 300,
  };
  return [
    { group: 'tool load (per job)', client: 'pg, one statement', run: () => pool.query(LOAD_SQL, [tenantId, PRODUCT]) },
    {
      group: 'tool load (per job)',
      client: 'Prisma $queryRaw, the same statement',
      run: () =>
        prisma.$queryRaw`SELECT id, tenant_id AS "tenantId", name, description, endpoint, method, input_schema AS "inputSchema",
                                headers_ciphertext AS "headersCiphertext", timeout_ms AS "timeoutMs", customer_tool_set_digest(${tenantId}::uuid, ${PRODUCT}) AS tool_set
                           FROM customer_tools WHERE tenant_id = ${tenantId}::uuid AND enabled AND ${PRODUCT} = ANY (products) ORDER BY created_at, id`,
    },
    {
      group: 'tool load (per job)',
      client: 'Prisma findMany + digest, one transaction',
      run: () =>
        prisma.$transaction(async (tx) => {
          const tools = await tx.customerTool.findMany({
            where: { tenantId, enabled: true, products: { has: PRODUCT } },
            select: LOAD_FIELDS,
            orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
          });
          const digest = await tx.$queryRaw<
            { tool_set: string | null }[]
          >`SELECT customer_tool_set_digest(${tenantId}::uuid, ${PRODUCT}) AS tool_set`;
          return { tools, digest };
        }),
    },
    {
      group: 'tool by id (portal)',
      client: 'pg',
      run: () =>
        pool.query(
          'SELECT id, tenant_id, name, description, endpoint, method, input_schema, header_names, enabled, timeout_ms, products, created_at, updated_at FROM customer_tools WHERE tenant_id = $1 AND id = $2',
          [tenantId, toolId],
        ),
    },
    {
      group: 'tool by id (portal)',
      client: 'Prisma findFirst',
      run: () =>
        prisma.customerTool.findFirst({
          where: { tenantId, id: toolId },
          select: {
            id: true,
            tenantId: true,
            name: true,
            description: true,
            endpoint: true,
            method: true,
            inputSchema: true,
            headerNames: true,
            enabled: true,
            timeoutMs: true,
            products: true,
            createdAt: true,
            updatedAt: true,
          },
        }),
    },
    {
      group: 'audit write (per tool call)',
      client: 'pg',
      run: () =>
        pool.query(
          `INSERT INTO customer_tool_calls (tenant_id, tool_id, tool_name, source, product, job_id, outcome, http_status, duration_ms, response_bytes)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING *`,
          [
            call.tenantId,
            call.toolId,
            call.toolName,
            call.source,
            call.product,
            call.jobId,
            call.outcome,
            call.httpStatus,
            call.durationMs,
            call.responseBytes,
          ],
        ),
    },
    { group: 'audit write (per tool call)', client: 'Prisma create', run: () => prisma.customerToolCall.create({ data: call }) },
  ];
}

async function measure(operation: Operation, durationS: number): Promise<Row> {
  const latencies: number[] = [];
  const cpuBefore = totalMs(ownCpuTime());
  const started = performance.now();
  const until = started + durationS * 1000;
  while (performance.now() < until) {
    const begun = performance.now();
    await operation.run();
    latencies.push(performance.now() - begun);
  }
  const elapsedS = (performance.now() - started) / 1000;
  const cpuMs = totalMs(ownCpuTime()) - cpuBefore;
  const { p50, p99 } = percentiles(latencies);
  return {
    group: operation.group,
    client: operation.client,
    perS: latencies.length / elapsedS,
    cpuUs: (cpuMs * 1000) / latencies.length,
    p50,
    p99,
  };
}

export async function crudClient(options: BenchOptions, command: string): Promise<boolean> {
  note('creating a database');
  const database = await createTestDatabase();
  const pool = createPool({ connectionString: database.url, applicationName: 'bench-crud-client', max: 2 });
  const prisma = prismaFor(pool);
  const rows: Row[] = [];
  try {
    const tenant = await prisma.tenant.create({ data: { name: 'bench' } });
    for (let index = 0; index < TOOLS; index++) {
      await prisma.customerTool.create({
        data: {
          tenantId: tenant.id,
          name: `tool_${index}`,
          description: 'Positions of a client account, with a description of the length customers write.',
          endpoint: 'https://api.example.com/positions',
          inputSchema: { type: 'object', properties: { account: { type: 'string' } }, required: ['account'] },
          headerNames: ['Authorization'],
          headersCiphertext: new Uint8Array(80).fill(index),
        },
      });
    }
    const first = await prisma.customerTool.findFirstOrThrow({ where: { tenantId: tenant.id }, orderBy: { createdAt: 'asc' } });
    for (const operation of operations(pool, prisma, tenant.id, first.id)) {
      note(`${operation.group}, ${operation.client}: ${options.warmupS} s warm-up, ${options.durationS} s measured`);
      await measure(operation, options.warmupS);
      rows.push(await measure(operation, options.durationS));
    }
  } finally {
    await pool.end();
    await database.drop();
  }

  print('## crud-client');
  print();
  print(`command: ${command}`);
  print(formatMachine(describeMachine()));
  print(
    `each measurement: ${options.warmupS} s warm-up (discarded), then ${options.durationS} s; one closed-loop client in the runner's process; ${TOOLS} tools for the tenant`,
  );
  print();
  print(
    table(
      ['operation', 'client', 'ops/s', 'client CPU µs/op', 'p50 ms', 'p99 ms'],
      rows.map((row) => [row.group, row.client, thousands(row.perS), fixed(row.cpuUs, 0), fixed(row.p50, 3), fixed(row.p99, 3)]),
    ),
  );
  print();
  return rows.every((row) => row.perS > 0);
}
