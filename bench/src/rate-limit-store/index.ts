// rate-limit-store: what counting a request costs the database. The gateway's real store
// (services/gateway/src/rate-limit/postgres-store.ts) on a database of the run's own, driven in-process by
// closed-loop clients (each sends its next hit when the last is counted), for two kinds of traffic:
//
// - many keys at the default limits, as the spec's customers make it: 500 keys limited to 100 a minute, keys
//   picked at random (counted hit by hit: no hits are reserved ahead at such limits);
// - one busy key with a large limit (an override), as the other scenarios' single bench key makes it.
//
// Reported per row: hits counted per second, statements sent per hit, and the latency of a hit (p50, p99).
import { createPool, type Pool } from '@fin/db';
import { createTestDatabase } from '@fin/testing';
import { FailOpenBreaker, PostgresRateLimitStore } from '../../../services/gateway/src/rate-limit/postgres-store';
import { formatMachine, describeMachine } from '../lib/machine';
import type { BenchOptions } from '../lib/options';
import { fixed, note, print, table, thousands } from '../lib/output';
import { percentiles } from '../lib/load';

interface Traffic {
  label: string;
  keys: number;
  limit: number;
}

const TRAFFIC: readonly Traffic[] = [
  { label: '500 keys, limit 100/min each', keys: 500, limit: 100 },
  { label: '1 key, limit 1,000,000/min', keys: 1, limit: 1_000_000 },
];
const CLIENTS = [1, 10, 50];

interface Row {
  traffic: string;
  clients: number;
  hitsPerS: number;
  statementsPerHit: number;
  p50: number;
  p99: number;
}

async function measure(pool: Pool, counted: { statements: number }, traffic: Traffic, clients: number, durationS: number, prefix: string): Promise<Row> {
  const store = new PostgresRateLimitStore(pool, prefix, 60_000, new FailOpenBreaker(5_000), 2_000);
  const keys = Array.from({ length: traffic.keys }, (_, index) => `key-${index}`);
  const latencies: number[] = [];
  const before = counted.statements;
  const until = performance.now() + durationS * 1000;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (performance.now() < until) {
        const key = keys[Math.floor(Math.random() * keys.length)] as string;
        store.limitFor(key, traffic.limit);
        const started = performance.now();
        await store.increment(key);
        latencies.push(performance.now() - started);
      }
    }),
  );
  const { p50, p99 } = percentiles(latencies);
  return {
    traffic: traffic.label,
    clients,
    hitsPerS: latencies.length / durationS,
    statementsPerHit: (counted.statements - before) / Math.max(1, latencies.length),
    p50,
    p99,
  };
}

export async function rateLimitStore(options: BenchOptions, command: string): Promise<boolean> {
  note('creating a database');
  const database = await createTestDatabase();
  const pool = createPool({ connectionString: database.url, applicationName: 'bench-rate-limit-store', max: 10 });
  // Counts the statements the store sends (the database itself is real).
  const counted = { statements: 0 };
  const query = pool.query.bind(pool) as (...args: unknown[]) => Promise<unknown>;
  (pool as unknown as { query: (...args: unknown[]) => Promise<unknown> }).query = (...args: unknown[]) => {
    counted.statements += 1;
    return query(...args);
  };
  const rows: Row[] = [];
  try {
    let run = 0;
    for (const traffic of TRAFFIC) {
      for (const clients of CLIENTS) {
        note(`${traffic.label}, ${clients} clients: ${options.warmupS} s warm-up, ${options.durationS} s measured`);
        await measure(pool, counted, traffic, clients, options.warmupS, `warm${run}:`);
        rows.push(await measure(pool, counted, traffic, clients, options.durationS, `run${run}:`));
        run++;
      }
    }
  } finally {
    await pool.end();
    await database.drop();
  }

  print('## rate-limit-store');
  print();
  print(`command: ${command}`);
  print(formatMachine(describeMachine()));
  print(`each measurement: ${options.warmupS} s warm-up (discarded), then ${options.durationS} s; closed-loop clients in the runner's process`);
  print();
  print('### Counting hits in Postgres: the gateway\'s store, in one process');
  print();
  print(
    table(
      ['traffic', 'clients', 'hits/s', 'statements per hit', 'p50 ms', 'p99 ms'],
      rows.map((row) => [row.traffic, String(row.clients), thousands(row.hitsPerS), fixed(row.statementsPerHit, 3), fixed(row.p50, 2), fixed(row.p99, 2)]),
    ),
  );
  print();
  return rows.every((row) => row.hitsPerS > 0);
}
