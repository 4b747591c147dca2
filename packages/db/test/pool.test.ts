import { createEmptyDatabase, waitFor, type TestDatabase } from '@fin/testing';
import pg from 'pg';
import { createPool, servicePool, withTransaction } from '../src';

describe('withTransaction', () => {
  let db: TestDatabase;
  let pool: pg.Pool;

  beforeAll(async () => {
    db = await createEmptyDatabase();
    pool = createPool({ connectionString: db.url, applicationName: 'pool-test', max: 2 });
  });
  afterAll(async () => {
    await pool.end();
    await db.drop();
  });

  it('commits what the work did, and rolls it back when the work throws', async () => {
    await pool.query('CREATE TABLE notes (text text)');
    await withTransaction(pool, (client) => client.query("INSERT INTO notes VALUES ('kept')"));
    await expect(
      withTransaction(pool, async (client) => {
        await client.query("INSERT INTO notes VALUES ('dropped')");
        throw new Error('changed my mind');
      }),
    ).rejects.toThrow('changed my mind');
    expect((await pool.query<{ text: string }>('SELECT text FROM notes')).rows).toEqual([{ text: 'kept' }]);
  });

  // A database restart cuts every connection. The pool guards only its idle connections; one checked out for a
  // transaction emits 'error' when its connection dies, which without a listener crashes the whole process.
  it('rejects, rather than crashing the process, when the connection dies mid-transaction; the pool goes on', async () => {
    const killer = new pg.Client(db.url);
    await killer.connect();
    try {
      const failed = withTransaction(pool, async (client) => {
        const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
        await killer.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
        // The server has gone while the transaction is open: the connection ends before the next statement.
        await new Promise((resolve) => setTimeout(resolve, 200));
        await client.query('SELECT 1');
      });
      await expect(failed).rejects.toThrow();
      // The broken connection was discarded, not handed out again.
      expect((await pool.query<{ one: number }>('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
      await expect(withTransaction(pool, (client) => client.query('SELECT 1'))).resolves.toBeDefined();
    } finally {
      await killer.end();
    }
  });
});

describe('createPool', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createEmptyDatabase();
  });
  afterAll(async () => {
    await db.drop();
  });

  it('applies session settings to every connection, and refuses one that is not a plain name and value', async () => {
    const pool = createPool({
      connectionString: db.url,
      applicationName: 'settings-test',
      max: 2,
      sessionSettings: { synchronous_commit: 'off' },
    });
    try {
      const [a, b] = await Promise.all([pool.connect(), pool.connect()]);
      try {
        for (const client of [a, b])
          expect((await client.query<{ synchronous_commit: string }>('SHOW synchronous_commit')).rows[0]?.synchronous_commit).toBe('off');
      } finally {
        a.release();
        b.release();
      }
    } finally {
      await pool.end();
    }
    const plain = createPool({ connectionString: db.url, applicationName: 'settings-test', max: 1 });
    try {
      // A pool without settings gets the server's own (whatever it is configured to).
      const { rows } = await plain.query<{ current: string; configured: string }>(
        "SELECT current_setting('synchronous_commit') AS current, reset_val AS configured FROM pg_settings WHERE name = 'synchronous_commit'",
      );
      expect(rows[0]?.current).toBe(rows[0]?.configured);
    } finally {
      await plain.end();
    }
    expect(() => createPool({ connectionString: db.url, applicationName: 'x', sessionSettings: { 'work_mem=1; DROP': 'x' } })).toThrow(
      TypeError,
    );
    expect(() => createPool({ connectionString: db.url, applicationName: 'x', sessionSettings: { work_mem: '1 -c fsync=off' } })).toThrow(
      TypeError,
    );
  });

  it("makes a service's pool from its config, named for it, and logs an idle connection's failure instead of throwing", async () => {
    const warned: unknown[] = [];
    const pool = servicePool(
      { DATABASE_URL: db.url, DATABASE_POOL_MAX: 3 },
      { applicationName: 'service-pool-test', logger: { warn: (...args: unknown[]) => void warned.push(args) } },
    );
    const killer = new pg.Client(db.url);
    await killer.connect();
    try {
      const { rows } = await pool.query<{ name: string; pid: number }>('SELECT current_setting($1) AS name, pg_backend_pid() AS pid', [
        'application_name',
      ]);
      expect(rows[0]?.name).toBe('service-pool-test');
      expect(pool.options.max).toBe(3);
      // The connection is idle in the pool when the server ends it (a restart, an operator's pg_terminate_backend).
      await killer.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
      await waitFor(() => warned.length > 0, { what: 'the idle connection failure logged' });
      expect(warned[0]).toEqual([{ err: expect.any(Error) }, 'idle database connection failed']);
    } finally {
      await killer.end();
      await pool.end();
    }
  });
});
