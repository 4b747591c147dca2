import { EventEmitter } from 'node:events';
import http from 'node:http';
import { createLifecycle, createServiceApp, createShutdown, onShutdownSignals, type Closer, type Lifecycle } from '../src';
import { captureLogger, deferred, listen, type Listening } from './helpers';

/** GET `path` with a fresh connection; resolves with the status and the body once the response ended. */
function get(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { agent: false }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        res.on('error', reject);
      })
      .on('error', reject);
  });
}

interface Fixture {
  server: Listening;
  lifecycle: Lifecycle;
  events: string[];
  slowStarted: Promise<void>;
  finishSlow: () => void;
  streamClosed: Promise<void>;
}

/** A service with a slow request the test finishes and an event stream that never ends on its own. */
async function fixture(): Promise<Fixture> {
  const { logger } = captureLogger();
  const events: string[] = [];
  const base = createLifecycle();
  const lifecycle: Lifecycle = {
    get shuttingDown() {
      return base.shuttingDown;
    },
    beginShutdown() {
      events.push('readiness off');
      base.beginShutdown();
    },
  };
  const started = deferred();
  const finish = deferred();
  const streamClosed = deferred();
  const app = createServiceApp({
    name: 'test',
    logger,
    readiness: async () => {},
    lifecycle,
    routes: (a) => {
      a.get('/slow', async (_req, res) => {
        started.resolve();
        await finish.promise;
        res.on('finish', () => events.push('open request answered'));
        res.json({ done: true });
      });
      a.get('/stream', (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('event: token\ndata: {}\n\n');
        res.on('close', () => {
          events.push('stream closed');
          streamClosed.resolve();
        });
      });
    },
  });
  const server = await listen(app);
  const close = server.server.close.bind(server.server);
  server.server.close = (callback?: (error?: Error) => void) => {
    events.push('stopped accepting');
    return close(callback);
  };
  return {
    server,
    lifecycle,
    events,
    slowStarted: started.promise,
    finishSlow: () => finish.resolve(),
    streamClosed: streamClosed.promise,
  };
}

const closers = (events: string[], failing?: string): Closer[] =>
  ['kafka consumer', 'kafka producer', 'database pool'].map((name) => ({
    name,
    close: async () => {
      events.push(name);
      if (name === failing) throw new Error(`${name} failed to close`);
    },
  }));

describe('createShutdown', () => {
  it('fails readiness, stops accepting, lets an open request finish, then closes in order and exits 0', async () => {
    const { server, lifecycle, events, slowStarted, finishSlow } = await fixture();
    const { logger } = captureLogger();
    try {
      const inFlight = get(`${server.url}/slow`);
      await slowStarted;
      const shutdown = createShutdown({
        logger,
        lifecycle,
        servers: [server.server],
        drainTimeoutMs: 60_000,
        closers: closers(events),
        exit: (code) => events.push(`exit ${code}`),
      });
      const done = shutdown('SIGTERM');

      expect(lifecycle.shuttingDown).toBe(true);
      expect(events).toEqual(['readiness off', 'stopped accepting']);
      await expect(get(`${server.url}/healthz`)).rejects.toMatchObject({ code: 'ECONNREFUSED' });

      finishSlow();
      expect(await inFlight).toEqual({ status: 200, body: '{"done":true}' });
      await done;
      expect(events).toEqual([
        'readiness off',
        'stopped accepting',
        'open request answered',
        'kafka consumer',
        'kafka producer',
        'database pool',
        'exit 0',
      ]);
    } finally {
      finishSlow();
      await server.close();
    }
  });

  it('closes streams still open at the drain deadline, then runs the closers', async () => {
    const { server, lifecycle, events, streamClosed } = await fixture();
    const { logger } = captureLogger();
    try {
      const streamOpen = deferred();
      const client = http.get(`${server.url}/stream`, { agent: false }, (res) => {
        res.once('data', () => streamOpen.resolve());
        res.on('error', () => {});
      });
      client.on('error', () => {});
      await streamOpen.promise;

      const shutdown = createShutdown({
        logger,
        lifecycle,
        servers: [server.server],
        drainTimeoutMs: 50,
        closers: closers(events),
        exit: (code) => events.push(`exit ${code}`),
      });
      await shutdown('SIGTERM');
      await streamClosed;
      expect(events).toEqual([
        'readiness off',
        'stopped accepting',
        'stream closed',
        'kafka consumer',
        'kafka producer',
        'database pool',
        'exit 0',
      ]);
    } finally {
      await server.close();
    }
  });

  it('exits at once with 1 on a second signal while draining', async () => {
    const { server, lifecycle, events, slowStarted, finishSlow } = await fixture();
    const { logger } = captureLogger();
    try {
      const inFlight = get(`${server.url}/slow`);
      await slowStarted;
      const shutdown = createShutdown({
        logger,
        lifecycle,
        servers: [server.server],
        drainTimeoutMs: 60_000,
        closers: closers(events),
        exit: (code) => events.push(`exit ${code}`),
      });
      const first = shutdown('SIGTERM');
      void shutdown('SIGINT');
      expect(events).toEqual(['readiness off', 'stopped accepting', 'exit 1']);
      finishSlow();
      await inFlight;
      await first;
      expect(events).toEqual([
        'readiness off',
        'stopped accepting',
        'exit 1',
        'open request answered',
        'kafka consumer',
        'kafka producer',
        'database pool',
        'exit 0',
      ]);
    } finally {
      finishSlow();
      await server.close();
    }
  });

  it('runs every closer even when one fails, and exits 1', async () => {
    const { server, lifecycle, events } = await fixture();
    const { logger, lines } = captureLogger();
    try {
      const shutdown = createShutdown({
        logger,
        lifecycle,
        servers: [server.server],
        drainTimeoutMs: 1_000,
        closers: closers(events, 'kafka producer'),
        exit: (code) => events.push(`exit ${code}`),
      });
      await shutdown('SIGTERM');
      expect(events.slice(-4)).toEqual(['kafka consumer', 'kafka producer', 'database pool', 'exit 1']);
      expect(lines.find((line) => line.msg === 'closing failed')).toMatchObject({ level: 'error', closer: 'kafka producer' });
    } finally {
      await server.close();
    }
  });
});

describe('onShutdownSignals', () => {
  it('starts shutdown on SIGTERM and SIGINT and can be removed', () => {
    const source = new EventEmitter();
    const signals: string[] = [];
    const remove = onShutdownSignals(async (signal) => void signals.push(signal), source);
    source.emit('SIGTERM');
    source.emit('SIGINT');
    remove();
    source.emit('SIGTERM');
    expect(signals).toEqual(['SIGTERM', 'SIGINT']);
    expect(source.listenerCount('SIGTERM')).toBe(0);
  });
});
