import { createEmptyDatabase, openHandles, waitFor, waitForNoLeaks, type TestDatabase } from '@fin/testing';
import { createServer, type Socket } from 'node:net';
import pg from 'pg';
import { createPool, listen, type Listener } from '../src';

interface Line {
  level: 'info' | 'warn' | 'error';
  message: string;
}

/** A logger that keeps its lines, so a test can tell what the listener reported. */
function recordingLogger(): {
  lines: Line[];
  info(details: object, message: string): void;
  warn(details: object, message: string): void;
  error(details: object, message: string): void;
} {
  const lines: Line[] = [];
  return {
    lines,
    info: (_details, message) => void lines.push({ level: 'info', message }),
    warn: (_details, message) => void lines.push({ level: 'warn', message }),
    error: (_details, message) => void lines.push({ level: 'error', message }),
  };
}

describe('listen', () => {
  let db: TestDatabase;
  let pool: pg.Pool;
  /** Sends the notifications and kills connections; a client of its own, so its socket is there before each test. */
  let admin: pg.Client;
  const open: Listener[] = [];

  beforeAll(async () => {
    db = await createEmptyDatabase();
    pool = createPool({ connectionString: db.url, applicationName: 'listen-test', max: 2 });
    admin = new pg.Client(db.url);
    await admin.connect();
  });
  afterEach(async () => {
    await Promise.all(open.splice(0).map((listener) => listener.close()));
  });
  afterAll(async () => {
    await admin.end();
    await pool.end();
    await db.drop();
  });

  const notify = (channel: string, payload: string) => admin.query('SELECT pg_notify($1, $2)', [channel, payload]);
  /** Terminates the backend whose last statement was `statement`; resolves to how many were terminated. */
  const terminate = async (statement: string) =>
    (
      await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query = $1', [
        statement,
      ])
    ).rowCount;
  const listenerConnections = async (statement: string) =>
    Number(
      (
        await admin.query<{ n: string }>('SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND query = $1', [
          statement,
        ])
      ).rows[0]?.n,
    );

  function start(channels: string | string[], options: Partial<Parameters<typeof listen>[2]> = {}) {
    const logger = recordingLogger();
    const received: { channel: string; payload: string }[] = [];
    const events: string[] = [];
    const listener = listen(channels, (payload, channel) => void received.push({ channel, payload }), {
      pool,
      logger,
      onListening: () => void events.push('listening'),
      onLost: () => void events.push('lost'),
      ...options,
    });
    open.push(listener);
    return { listener, logger, received, events };
  }

  it('delivers the notifications of each of its channels, on a connection outside the pool', async () => {
    const { listener, received, events } = start(['listen_a', 'listen_b']);
    await waitFor(() => listener.listening, { what: 'LISTEN to be in place' });
    expect(events).toEqual(['listening']);
    // The LISTEN connection is its own: the pool lends none for it.
    expect(pool.totalCount).toBe(0);

    await notify('listen_a', 'one');
    await notify('listen_b', 'two');
    await notify('listen_other', 'not for it');
    await notify('listen_a', '');
    await waitFor(() => received.length === 3, { what: 'the notifications' });
    expect(received).toEqual([
      { channel: 'listen_a', payload: 'one' },
      { channel: 'listen_b', payload: 'two' },
      { channel: 'listen_a', payload: '' },
    ]);
  });

  it('reconnects after its connection is terminated, calls onListening to catch up, and delivers again', async () => {
    const { listener, logger, received, events } = start('listen_kill', { reconnectDelayMs: 50 });
    await waitFor(() => listener.listening, { what: 'LISTEN to be in place' });
    await notify('listen_kill', 'before');
    await waitFor(() => received.length === 1, { what: 'the first notification' });

    expect(await terminate('LISTEN listen_kill')).toBe(1);
    await waitFor(() => events.includes('lost'), { what: 'the loss to be noticed' });
    await waitFor(() => listener.listening, { what: 'the listener to reconnect' });
    expect(events).toEqual(['listening', 'lost', 'listening']);
    expect(logger.lines).toEqual([
      { level: 'warn', message: 'lost the LISTEN connection on listen_kill; reconnecting' },
      { level: 'info', message: 'listening on listen_kill again' },
    ]);

    await notify('listen_kill', 'after');
    await waitFor(() => received.length === 2, { what: 'the notification after reconnecting' });
    expect(received.map((message) => message.payload)).toEqual(['before', 'after']);
    // The dead connection was replaced, not added to.
    expect(await listenerConnections('LISTEN listen_kill')).toBe(1);
  });

  it('ends at once when closed while waiting to reconnect, and leaves no connection or socket behind', async () => {
    const baseline = openHandles();
    const { listener, events } = start('listen_wait', { reconnectDelayMs: 60_000, maxReconnectDelayMs: 60_000 });
    await waitFor(() => listener.listening, { what: 'LISTEN to be in place' });
    expect(await terminate('LISTEN listen_wait')).toBe(1);
    await waitFor(() => !listener.listening, { what: 'the loss to be noticed' });

    const started = Date.now();
    await listener.close();
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(await waitForNoLeaks(baseline, 1_000)).toEqual([]);
    expect(await listenerConnections('LISTEN listen_wait')).toBe(0);
    expect(events).toEqual(['listening', 'lost']);
  });

  it('retries while the database cannot be reached, and closes at once', async () => {
    const baseline = openHandles();
    // Nothing listens on port 1: every attempt is refused.
    const unreachable = createPool({ connectionString: 'postgresql://postgres@127.0.0.1:1/none', applicationName: 'listen-test' });
    try {
      const { listener, logger, events } = start('listen_down', { pool: unreachable, reconnectDelayMs: 20 });
      await waitFor(() => logger.lines.length >= 3, { what: 'a few attempts' });
      expect(new Set(logger.lines.map((line) => line.message))).toEqual(new Set(['cannot LISTEN on listen_down; retrying']));
      const started = Date.now();
      await listener.close();
      expect(Date.now() - started).toBeLessThan(1_000);
      const attempts = logger.lines.length;
      await new Promise((resolve) => setTimeout(resolve, 200));
      // No attempt after close(), and onLost only ever follows a connection that was listening.
      expect(logger.lines).toHaveLength(attempts);
      expect(events).toEqual([]);
      expect(await waitForNoLeaks(baseline, 1_000)).toEqual([]);
    } finally {
      await unreachable.end();
    }
  });

  it('ends at once when closed while its connection is still being set up', async () => {
    const baseline = openHandles();
    const { listener, events } = start('listen_early');
    const started = Date.now();
    await listener.close();
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(listener.listening).toBe(false);
    expect(events).toEqual([]);
    expect(await waitForNoLeaks(baseline, 1_000)).toEqual([]);
  });

  it('ends at once when closed while a server accepted the connection and never answers', async () => {
    const sockets = new Set<Socket>();
    let accepted = 0;
    const silent = createServer((socket) => {
      accepted++;
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      // Reads (and ignores) what it is sent, so that it sees the client's end.
      socket.resume();
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as { port: number };
    const baseline = openHandles();
    const unanswered = createPool({ connectionString: `postgresql://postgres@127.0.0.1:${port}/none`, applicationName: 'listen-test' });
    try {
      const { listener } = start('listen_silent', { pool: unanswered });
      await waitFor(() => sockets.size === 1, { what: 'the connection to reach the server' });
      const started = Date.now();
      await listener.close();
      expect(Date.now() - started).toBeLessThan(1_000);
      // The server saw the connection closed (it would have waited for the connect timeout), and no socket is left.
      await waitFor(() => sockets.size === 0, { timeoutMs: 1_000, what: 'the server to see the connection closed' });
      expect(accepted).toBe(1);
      expect(await waitForNoLeaks(baseline, 1_000)).toEqual([]);
    } finally {
      await unanswered.end();
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  it('runs the fallback poll whether or not it is connected, and close() waits for a poll in flight', async () => {
    let polls = 0;
    let inFlight = false;
    const { listener } = start('listen_poll', {
      reconnectDelayMs: 60_000,
      poll: {
        intervalMs: 30,
        run: async () => {
          inFlight = true;
          await new Promise((resolve) => setTimeout(resolve, 100));
          polls++;
          inFlight = false;
        },
      },
    });
    await waitFor(() => listener.listening && polls >= 1, { what: 'a poll while listening' });
    expect(await terminate('LISTEN listen_poll')).toBe(1);
    await waitFor(() => !listener.listening, { what: 'the loss to be noticed' });
    const before = polls;
    await waitFor(() => polls > before && inFlight, { what: 'a poll while disconnected, and the next one started' });
    await listener.close();
    expect(inFlight).toBe(false);
  });

  it('logs a handler that throws and goes on delivering', async () => {
    const logger = recordingLogger();
    const received: string[] = [];
    const listener = listen(
      'listen_throw',
      (payload) => {
        if (payload === 'bad') throw new Error('cannot handle it');
        received.push(payload);
      },
      { pool, logger },
    );
    open.push(listener);
    await waitFor(() => listener.listening, { what: 'LISTEN to be in place' });
    await notify('listen_throw', 'bad');
    await notify('listen_throw', 'good');
    await waitFor(() => received.length === 1, { what: 'the notification after the one that threw' });
    expect(received).toEqual(['good']);
    expect(logger.lines).toEqual([{ level: 'error', message: 'handling a notification on listen_throw failed' }]);
  });

  it('refuses a channel name that is not a plain identifier', () => {
    const logger = recordingLogger();
    expect(() => listen('outbox; DROP TABLE jobs', () => undefined, { pool, logger })).toThrow(TypeError);
    expect(() => listen([], () => undefined, { pool, logger })).toThrow(TypeError);
  });
});
