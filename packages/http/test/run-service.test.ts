// runService as a process of its own (test/fixtures/run-service.ts): how a start that fails ends, and the shutdown
// order on SIGTERM, seen from outside as an operator sees them: the exit code and the log lines.
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type Server } from 'node:net';
import path from 'node:path';
import type { Readable } from 'node:stream';

interface LogLine {
  level: string;
  msg: string;
  [field: string]: unknown;
}

interface Fixture {
  child: ChildProcessByStdio<null, Readable, Readable>;
  lines: LogLine[];
  stderr: () => string;
  /** Resolves with the first line `msg` once it is logged. */
  logged(msg: string): Promise<LogLine>;
  exited: Promise<number | null>;
}

function startFixture(env: Record<string, string>): Fixture {
  const child = spawn(process.execPath, ['--conditions=development', '--import', 'tsx', path.join(__dirname, 'fixtures/run-service.ts')], {
    cwd: path.join(__dirname, '..'),
    env: { PATH: process.env.PATH, METRICS_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: LogLine[] = [];
  const waiting: { msg: string; resolve: (line: LogLine) => void }[] = [];
  let rest = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    const parts = (rest + chunk).split('\n');
    rest = parts.pop() ?? '';
    for (const part of parts.filter((text) => text !== '')) {
      const line = JSON.parse(part) as LogLine;
      lines.push(line);
      for (const waiter of waiting.filter((entry) => entry.msg === line.msg)) waiter.resolve(line);
    }
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exited = once(child, 'close').then(([code]) => code as number | null);
  return {
    child,
    lines,
    stderr: () => stderr,
    logged: (msg) => {
      const seen = lines.find((line) => line.msg === msg);
      return seen ? Promise.resolve(seen) : new Promise((resolve) => waiting.push({ msg, resolve }));
    },
    exited,
  };
}

describe('runService', () => {
  let taken: Server;
  let takenPort: number;
  const running: Fixture[] = [];

  beforeAll(async () => {
    taken = createServer();
    taken.listen(0, '127.0.0.1');
    await once(taken, 'listening');
    takenPort = (taken.address() as { port: number }).port;
  });
  afterEach(async () => {
    for (const fixture of running.splice(0)) {
      if (fixture.child.exitCode === null && fixture.child.signalCode === null) fixture.child.kill('SIGKILL');
      await fixture.exited;
    }
  });
  afterAll(async () => {
    taken.close();
    await once(taken, 'close');
  });

  const start = (env: Record<string, string>) => {
    const fixture = startFixture(env);
    running.push(fixture);
    return fixture;
  };

  it('ends a start whose port is taken with one fatal line naming PORT and exit code 1, not an uncaught error', async () => {
    const fixture = start({ PORT: String(takenPort) });
    expect(await fixture.exited).toBe(1);
    const fatal = fixture.lines.filter((line) => line.level === 'fatal');
    expect(fatal).toHaveLength(1);
    expect(fatal[0]).toMatchObject({
      service: 'fixture',
      msg: 'fixture could not start',
      // The system error follows as the cause.
      err: {
        message: expect.stringMatching(
          new RegExp(`^PORT ${takenPort} is in use on 127\\.0\\.0\\.1; set PORT to a free port \\(0 picks one\\)\\.`),
        ),
        code: 'EADDRINUSE',
      },
    });
    // Nothing else reported it: no error lines, no stack on stderr, and it never said it was up.
    expect(fixture.lines.filter((line) => line.level === 'error')).toEqual([]);
    expect(fixture.lines.map((line) => line.msg)).not.toContain('ready');
    expect(fixture.stderr()).toBe('');
  });

  it('ends a start whose metrics port is taken the same way, before the service starts', async () => {
    const fixture = start({ METRICS_PORT: String(takenPort) });
    expect(await fixture.exited).toBe(1);
    expect(fixture.lines.filter((line) => line.level === 'fatal')).toEqual([
      expect.objectContaining({
        msg: 'fixture could not start',
        err: expect.objectContaining({ message: expect.stringContaining(`METRICS_PORT ${takenPort} is in use`) }),
      }),
    ]);
    expect(fixture.lines.map((line) => line.msg)).not.toContain('listening');
  });

  it('shuts down in the fixed order on SIGTERM: readiness off, the server drains, the closers in order, the metrics listener, the trace exporter last', async () => {
    const fixture = start({});
    const ready = await fixture.logged('ready');
    const url = `http://127.0.0.1:${String(ready.port)}`;
    expect((await fetch(`${url}/readyz`)).status).toBe(200);
    expect((await fetch(String(ready.metrics))).status).toBe(200);

    fixture.child.kill('SIGTERM');
    expect(await fixture.exited).toBe(0);
    const after = fixture.lines
      .slice(fixture.lines.indexOf(ready) + 1)
      .map((line) => (line.msg === 'closed' ? `closed ${String(line.closer)}` : line.msg));
    expect(after).toEqual([
      'shutting down: readiness off',
      'refusing new connections; draining open requests and streams',
      'closed worker',
      'closed database pool',
      'closed metrics listener',
      // Last, so that spans of the shutdown are exported too (a no-op here: no OTEL endpoint is set).
      'closed trace exporter',
      'stopped',
    ]);
  });

  it('exits at once with code 1 on a second signal during the shutdown', async () => {
    const fixture = start({ FIXTURE_WORKER_STOP_MS: '30000', SHUTDOWN_DRAIN_TIMEOUT_MS: '60000' });
    await fixture.logged('ready');
    // The config check ran on the parsed config before the start.
    expect(fixture.lines.map((line) => line.msg)).toContain('the worker takes FIXTURE_WORKER_STOP_MS to stop');
    fixture.child.kill('SIGTERM');
    await fixture.logged('refusing new connections; draining open requests and streams');
    fixture.child.kill('SIGTERM');
    expect(await fixture.exited).toBe(1);
    expect(fixture.lines.map((line) => line.msg)).toContain('second signal during shutdown: exiting now');
    expect(fixture.lines.map((line) => line.msg)).not.toContain('stopped');
  });
});
