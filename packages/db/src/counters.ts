// Fixed-window counters in rate_limit_counters, shared by every replica of every process that counts there (the
// gateway's per-account limits, the portal's sign-in and test-call throttles; rows are named by their users'
// prefixes). The gateway's sweep deletes ended windows.

/** A counter after hits were added: its hits in the current window, and when the window ends. */
export interface CounterRow {
  counter_key: string;
  hits: number;
  reset_at: Date;
}

// One statement adds hits to any number of counters ($1 the keys, $2 each key's hits), atomic under concurrency:
// the row lock taken by ON CONFLICT DO UPDATE orders the increments of one counter, and each sees the latest
// committed hits. The keys go in sorted, so two statements lock shared rows in the same order and cannot
// deadlock. A window that has ended is restarted by the same statement (fixed windows, starting at the first
// hit after the previous one ended).
const ADD_MANY = `
  INSERT INTO rate_limit_counters AS c (counter_key, hits, reset_at)
  SELECT key, hits, now() + $3::int * interval '1 millisecond'
    FROM unnest($1::text[], $2::int[]) AS t(key, hits)
   ORDER BY key
  ON CONFLICT (counter_key) DO UPDATE SET
    hits     = CASE WHEN c.reset_at <= now() THEN excluded.hits ELSE c.hits + excluded.hits END,
    reset_at = CASE WHEN c.reset_at <= now() THEN excluded.reset_at ELSE c.reset_at END
  RETURNING counter_key, hits, reset_at`;

/** The same for one counter (the usual case on a gateway that is not busy): a simpler plan, measurably faster. */
const ADD_ONE = `
  INSERT INTO rate_limit_counters AS c (counter_key, hits, reset_at)
  VALUES ($1, $2::int, now() + $3::int * interval '1 millisecond')
  ON CONFLICT (counter_key) DO UPDATE SET
    hits     = CASE WHEN c.reset_at <= now() THEN excluded.hits ELSE c.hits + excluded.hits END,
    reset_at = CASE WHEN c.reset_at <= now() THEN excluded.reset_at ELSE c.reset_at END
  RETURNING counter_key, hits, reset_at`;

/**
 * The statement that adds `hits[i]` to counter `keys[i]` in windows of `windowMs` (a named prepared statement;
 * pass it to `query`, adding a `query_timeout` where the caller wants one). Rows come back as CounterRow.
 */
export function addCounterHits(
  keys: readonly string[],
  hits: readonly number[],
  windowMs: number,
): { name: string; text: string; values: unknown[] } {
  if (keys.length !== hits.length) throw new TypeError('addCounterHits needs one hit count per key');
  return keys.length === 1
    ? { name: 'rate-limit-counter-add-one', text: ADD_ONE, values: [keys[0], hits[0], windowMs] }
    : { name: 'rate-limit-counter-add-many', text: ADD_MANY, values: [[...keys], [...hits], windowMs] };
}
