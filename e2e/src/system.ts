// Runs the real services as separate processes (as they are deployed), against a database of the test's own, the
// test Kafka broker under a topic prefix of the test's own, and fakes of what we do not own (Claude, Finnhub).
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import path from 'node:path';
import { TEST_KAFKA_BROKERS, uniqueName } from '@fin/testing';

const ROOT = path.resolve(__dirname, '../..');

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export interface ServiceProcess {
  name: string;
  child: ChildProcess;
  /** Everything the process wrote, for failure messages. */
  output(): string;
  /** Sends a signal and waits for the process to exit. */
  stop(signal?: NodeJS.Signals): Promise<void>;
  exited: Promise<number | null>;
}

/** Starts `services/<dir>/src/main.ts` under Node with tsx, as `npm start` does. */
export function startService(name: string, dir: string, env: Record<string, string>): ServiceProcess {
  const child = spawn(process.execPath, ['--conditions=development', '--import', 'tsx', 'src/main.ts'], {
    cwd: path.join(ROOT, 'services', dir),
    env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-20_000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    name,
    child,
    output: () => output,
    exited,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Polls a URL until it answers 200 (the service's readiness probe), or fails with the process's output. */
export async function waitUntilReady(url: string, service: ServiceProcess, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (service.child.exitCode !== null) throw new Error(`${service.name} exited (${service.child.exitCode}):\n${service.output()}`);
    try {
      const res = await fetch(url);
      if (res.status === 200) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`${service.name} was not ready within ${timeoutMs} ms:\n${service.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export interface SystemEnv {
  databaseUrl: string;
  anthropicUrl: string;
  finnhubUrl: string;
  finnhubToken: string;
}

/** The environment every service of one system shares. */
export function sharedEnv({ databaseUrl, anthropicUrl, finnhubUrl, finnhubToken }: SystemEnv): Record<string, string> {
  return {
    DATABASE_URL: databaseUrl,
    INTERNAL_SIGNING_SECRET: randomBytes(32).toString('hex'),
    KAFKA_BROKERS: TEST_KAFKA_BROKERS.join(','),
    KAFKA_TOPIC_PREFIX: `${uniqueName('e2e')}.`,
    ANTHROPIC_API_KEY: 'sk-ant-e2e-fake-key-0000',
    ANTHROPIC_BASE_URL: anthropicUrl,
    AI_MAX_RETRIES: '1',
    AI_WEB_SEARCH: 'false',
    FINNHUB_API_KEY: finnhubToken,
    FINNHUB_BASE_URL: finnhubUrl,
  };
}

export interface System {
  gatewayUrl: string;
  services: ServiceProcess[];
  /** Runs the admin CLI against the system's database; returns its stdout. */
  admin(args: string[]): string;
  /** Starts another news worker process (e.g. after killing one). */
  startWorker(extraEnv?: Record<string, string>): ServiceProcess;
  /** A new tenant with a key of all scopes, and polling limits raised for tests. */
  tenantKey(name: string): string;
  stop(): Promise<void>;
}

/**
 * Gateway, jobs service, news API and one news worker, each a process of its own, started in parallel and
 * ready when this resolves.
 */
export async function startSystem(shared: Record<string, string>, workerEnv: Record<string, string> = {}): Promise<System> {
  const { spawnSync } = await import('node:child_process');
  const [gatewayPort, newsPort, jobsPort] = await Promise.all([freePort(), freePort(), freePort()]);
  const gatewayUrl = `http://127.0.0.1:${gatewayPort}`;
  const services: ServiceProcess[] = [];
  const startWorker = (extraEnv: Record<string, string> = {}) => {
    const worker = startService('news-worker', 'news', { ...shared, NEWS_ROLE: 'worker', PORT: '0', ...workerEnv, ...extraEnv });
    services.push(worker);
    return worker;
  };
  const jobs = startService('jobs', 'jobs', { ...shared, PORT: String(jobsPort), JOB_REAPER_INTERVAL_MS: '250' });
  const newsApi = startService('news-api', 'news', { ...shared, NEWS_ROLE: 'api', PORT: String(newsPort) });
  const gateway = startService('gateway', 'gateway', {
    ...shared,
    PORT: String(gatewayPort),
    NEWS_URL: `http://127.0.0.1:${newsPort}`,
    JOBS_URL: `http://127.0.0.1:${jobsPort}`,
  });
  services.push(jobs, newsApi, gateway);
  startWorker();
  const stop = async () => {
    await Promise.all(services.map((service) => service.stop()));
  };
  try {
    await Promise.all([
      waitUntilReady(`http://127.0.0.1:${jobsPort}/readyz`, jobs),
      waitUntilReady(`http://127.0.0.1:${newsPort}/readyz`, newsApi),
      waitUntilReady(`${gatewayUrl}/readyz`, gateway),
    ]);
  } catch (error) {
    await stop();
    throw error;
  }
  const admin = (args: string[]) => {
    const run = spawnSync(process.execPath, ['--conditions=development', '--import', 'tsx', 'src/admin/cli.ts', ...args], {
      cwd: path.join(ROOT, 'services/gateway'),
      env: { PATH: process.env.PATH ?? '', DATABASE_URL: shared.DATABASE_URL },
      encoding: 'utf8',
    });
    if (run.status !== 0) throw new Error(`admin ${args.join(' ')} failed: ${run.stderr}`);
    return run.stdout;
  };
  return {
    gatewayUrl,
    services,
    admin,
    startWorker,
    tenantKey(name) {
      admin(['tenants', 'create', name]);
      // Tests poll faster than the default 600 status requests per minute allow.
      admin(['limits', 'set', '--tenant', name, '--product', 'jobs', '--per-minute', '100000']);
      admin(['limits', 'set', '--tenant', name, '--product', 'news', '--per-minute', '100000']);
      return (JSON.parse(admin(['keys', 'create', '--tenant', name, '--json'])) as { api_key: string }).api_key;
    },
    stop,
  };
}
