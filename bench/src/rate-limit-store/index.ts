// rate-limit-store: what counting a request costs the database. The gateway's real store
// (services/gateway/src/rate-limit/postgres-store.ts) on a database of the run's own, driven in-process by
// closed-loop clients (each sends its next hit when the last is counted), for two kinds of traffic:
//
// - many keys at the default limits, as the spec's customers make it: 500 keys limited to 100 a minute, keys
//   picked at random (counted hit by hit: no hits are reserved ahead at such limits);
// - one busy key with a large limit (an override), as the other scenarios' single bench key makes it.
//
// Reported per row: hits counted per second, statements sent per hit, and the latency of a hit (p50, p99).
//
// Then the accuracy of local counting across replicas: two stores (two pools, as two gateway replicas) share one
// account's limit, their clients sending until refused, once with both replicas busy and once with one replica
// whose view of the counter is stale (it read the counter, then the other replica used up the limit). Reported:
// requests admitted against the limit (over-admission, %) and statements per request.
import { createPool, type Pool } from '@fin/db';
import { createTestDatabase } from '@fin/testing';
import { FailOpenBreaker, LOCAL_SHARE, PostgresRateLimitStore } from '../../../services/gateway/src/rate-limit/postgres-store';
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

async function measure(
  pool: Pool,
  counted: { statements: number },
  traffic: Traffic,
  clients: number,
  durationS: number,
  prefix: string,
): Promise<Row> {
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

interface AccuracyRow {
  case: string;
  limit: number;
  admitted: number;
  hits: number;
  statements: number;
}

// Small enough that the busy replica uses it up while the idle one's view is still fresh (the worst case).
const ACCURACY_LIMIT = 20_000;
const ACCURACY_CLIENTS = 5;

/** Two replicas (a pool each) sharing one limit; their clients send until refused. */
async function accuracy(pools: [Pool, Pool], counted: { statements: number }, stale: boolean, prefix: string): Promise<AccuracyRow> {
  const stores = pools.map((pool) => new PostgresRateLimitStore(pool, prefix, 60_000, new FailOpenBreaker(5_000), 2_000)) as [
    PostgresRateLimitStore,
    PostgresRateLimitStore,
  ];
  const key = 'account';
  let admitted = 0;
  let hits = 0;
  const before = counted.statements;
  const until = (store: PostgresRateLimitStore) =>
    Promise.all(
      Array.from({ length: ACCURACY_CLIENTS }, async () => {
        for (;;) {
          store.limitFor(key, ACCURACY_LIMIT);
          hits++;
          if ((await store.increment(key)).totalHits > ACCURACY_LIMIT) return;
          admitted++;
        }
      }),
    );
  if (stale) {
    // The first replica reads the counter, the second uses up the limit, then the first one's clients arrive.
    const [idle, busy] = stores;
    idle.limitFor(key, ACCURACY_LIMIT);
    hits++;
    await idle.increment(key);
    admitted++;
    await until(busy);
    await until(idle);
  } else {
    await Promise.all(stores.map(until));
  }
  await Promise.all(stores.map((store) => store.close()));
  return {
    case: stale ? 'one replica busy, then the other with a stale view' : 'both replicas busy at once',
    limit: ACCURACY_LIMIT,
    admitted,
    hits,
    statements: counted.statements - before,
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
  const accuracyRows: AccuracyRow[] = [];
  const second = createPool({ connectionString: database.url, applicationName: 'bench-rate-limit-store-b', max: 10 });
  const secondQuery = second.query.bind(second) as (...args: unknown[]) => Promise<unknown>;
  (second as unknown as { query: (...args: unknown[]) => Promise<unknown> }).query = (...args: unknown[]) => {
    counted.statements += 1;
    return secondQuery(...args);
  };
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
    for (const stale of [false, true]) {
      note(`two replicas sharing a limit of ${thousands(ACCURACY_LIMIT)}: ${stale ? 'one with a stale view' : 'both busy'}`);
      accuracyRows.push(await accuracy([pool, second], counted, stale, `accuracy${accuracyRows.length}:`));
    }
  } finally {
    await second.end();
    await pool.end();
    await database.drop();
  }

  print('## rate-limit-store');
  print();
  print(`command: ${command}`);
  print(formatMachine(describeMachine()));
  print(
    `each measurement: ${options.warmupS} s warm-up (discarded), then ${options.durationS} s; closed-loop clients in the runner's process`,
  );
  print();
  print("### Counting hits in Postgres: the gateway's store, in one process");
  print();
  print(
    table(
      ['traffic', 'clients', 'hits/s', 'statements per hit', 'p50 ms', 'p99 ms'],
      rows.map((row) => [
        row.traffic,
        String(row.clients),
        thousands(row.hitsPerS),
        fixed(row.statementsPerHit, 3),
        fixed(row.p50, 2),
        fixed(row.p99, 2),
      ]),
    ),
  );
  print();
  print(`### Two replicas sharing one limit: local counting, synchronised in batches (local budget 1/${LOCAL_SHARE} of the headroom)`);
  print();
  print(
    table(
      ['case', 'limit', 'admitted', 'over-admission', 'requests', 'statements per request'],
      accuracyRows.map((row) => [
        row.case,
        thousands(row.limit),
        thousands(row.admitted),
        `${fixed(((row.admitted - row.limit) / row.limit) * 100, 2)} %`,
        thousands(row.hits),
        fixed(row.statements / row.hits, 4),
      ]),
    ),
  );
  print(
    `(bound: with R replicas at most R/${LOCAL_SHARE} of the limit over, ${fixed((2 / LOCAL_SHARE) * 100, 2)} % with two; target ≤ 1 %)`,
  );
  print();
  const accurate = accuracyRows.every((row) => row.admitted <= row.limit * 1.01 && row.admitted >= row.limit - 2 * ACCURACY_CLIENTS);
  if (!accurate) print('FAILED: over-admission above 1 %, or fewer admitted than the limit');
  return rows.every((row) => row.hitsPerS > 0) && accurate;
}
