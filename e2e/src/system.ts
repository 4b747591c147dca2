// Runs the real services as separate processes (as they are deployed), against a database of the test's own, the
// test Kafka broker under a topic prefix of the test's own, and fakes of what we do not own (Claude, Finnhub).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { TEST_KAFKA_BROKERS, freePort, uniqueName } from '@fin/testing';

export { freePort };

const ROOT = path.resolve(__dirname, '../..');

export interface ServiceProcess {
  name: string;
  /** The service's folder under services/ and the environment it was started with (to start it again). */
  dir: string;
  env: Record<string, string>;
  child: ChildProcess;
  /** Everything the process wrote, for failure messages. */
  output(): string;
  /** Sends a signal and waits for the process to exit. */
  stop(signal?: NodeJS.Signals): Promise<void>;
  exited: Promise<number | null>;
}

/**
 * Starts `services/<dir>/dist/main.js`, the compiled output its container image runs (`npm test` builds it
 * first; after changing sources, `npm run build` before running a system test on its own).
 */
export function startService(name: string, dir: string, env: Record<string, string>): ServiceProcess {
  return startProcess(name, dir, ['dist/main.js'], env);
}

/** Starts `node <args>` in `services/<dir>`. */
function startProcess(name: string, dir: string, args: string[], env: Record<string, string>): ServiceProcess {
  const child = spawn(process.execPath, args, {
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
    dir,
    env,
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
    // The portal's session cookies: a secret of its own, never the signing secret.
    PORTAL_SESSION_SECRET: randomBytes(32).toString('hex'),
    KAFKA_BROKERS: TEST_KAFKA_BROKERS.join(','),
    KAFKA_TOPIC_PREFIX: `${uniqueName('e2e')}.`,
    ANTHROPIC_API_KEY: 'sk-ant-e2e-fake-key-0000',
    ANTHROPIC_BASE_URL: anthropicUrl,
    AI_MAX_RETRIES: '1',
    AI_WEB_SEARCH: 'false',
    FINNHUB_API_KEY: finnhubToken,
    FINNHUB_BASE_URL: finnhubUrl,
    // SEC EDGAR's bundled sample (labelled as such in results): with a model key set, EDGAR would otherwise be read
    // online and need an operator's User-Agent. The stock-report worker test and the filings tests run a fake EDGAR.
    EDGAR_OFFLINE: 'true',
    // Several services (and tests) run side by side: each metrics listener takes a free port.
    METRICS_PORT: '0',
    // The portal seals customer-tool secrets with it and the product workers open them: one key for the system.
    CUSTOMER_TOOLS_ENCRYPTION_KEY: `e2e-1:${randomBytes(32).toString('base64')}`,
  };
}

/**
 * The product services startSystem can run: each has an API role (behind the gateway at `urlVar`) and, when
 * `worker` is set, a separate worker role selected by `roleVar`. Services without roles run as one process.
 */
const PRODUCT_SERVICES = {
  news: { dir: 'news', urlVar: 'NEWS_URL', roleVar: 'NEWS_ROLE', worker: true },
  analysis: { dir: 'analysis', urlVar: 'ANALYSIS_URL', roleVar: 'ANALYSIS_ROLE', worker: true },
  'stock-report': { dir: 'stock-report', urlVar: 'STOCK_REPORT_URL', roleVar: 'STOCK_REPORT_ROLE', worker: true },
  chat: { dir: 'chat', urlVar: 'CHAT_URL', worker: false },
  portal: { dir: 'portal', urlVar: 'PORTAL_URL', worker: false },
  // Calls the API back through the gateway (MCP_API_URL, set below).
  mcp: { dir: 'mcp', urlVar: 'MCP_URL', worker: false },
} as const satisfies Record<string, { dir: string; urlVar: string; roleVar?: string; worker: boolean }>;
type ProductService = keyof typeof PRODUCT_SERVICES;

/**
 * How the gateway reaches the services: `http`, each service a process of its own behind it (as deployed);
 * `in-process`, every service a unit of the one process `npm start` runs (services/standalone), called directly.
 */
export type UpstreamMode = 'http' | 'in-process';

/** Both modes, for the product suites that run through each (describe.each). */
export const UPSTREAM_MODES: readonly UpstreamMode[] = ['http', 'in-process'];

export interface SystemOptions {
  /** How the gateway reaches the services (default http). */
  upstream?: UpstreamMode;
  /** The product services to run (default: news only). */
  products?: readonly ProductService[];
  /** Extra environment per product service, for both of its roles. */
  productEnv?: Partial<Record<ProductService, Record<string, string>>>;
}

export interface System {
  gatewayUrl: string;
  services: ServiceProcess[];
  /** Base URL of each running product service's API role, for going around the gateway. */
  productUrls: Partial<Record<ProductService, string>>;
  /** Runs the admin CLI against the system's database; returns its stdout. */
  admin(args: string[]): string;
  /** Starts another worker process of a product (default news), e.g. after killing one. */
  startWorker(extraEnv?: Record<string, string>, product?: ProductService): ServiceProcess;
  /**
   * Starts a service again as it was started (same folder, environment and port), e.g. after killing it, and
   * puts the new process in its place in `services`. Resolves once it is ready when `readyUrl` is given.
   */
  restart(service: ServiceProcess, readyUrl?: string): Promise<ServiceProcess>;
  /** A new tenant with a key of all scopes, and polling limits raised for tests. */
  tenantKey(name: string): string;
  stop(): Promise<void>;
}

/**
 * Gateway, jobs service and the chosen product services (API role and one worker each), each a process of its
 * own, started in parallel and ready when this resolves. `workerEnv` applies to every worker process.
 */
export async function startSystem(
  shared: Record<string, string>,
  workerEnv: Record<string, string> = {},
  options: SystemOptions = {},
): Promise<System> {
  if (options.upstream === 'in-process') return startInProcessSystem(shared, workerEnv, options);
  const products = options.products ?? ['news'];
  const [gatewayPort, jobsPort, ...productPorts] = await Promise.all([freePort(), freePort(), ...products.map(() => freePort())]);
  const gatewayUrl = `http://127.0.0.1:${gatewayPort}`;
  const services: ServiceProcess[] = [];
  const productUrls: Partial<Record<ProductService, string>> = {};
  const startWorker = (extraEnv: Record<string, string> = {}, product: ProductService = 'news') => {
    const spec: { dir: string; roleVar?: string } = PRODUCT_SERVICES[product];
    const worker = startService(`${product}-worker`, spec.dir, {
      ...shared,
      ...(spec.roleVar ? { [spec.roleVar]: 'worker' } : {}),
      PORT: '0',
      ...options.productEnv?.[product],
      ...workerEnv,
      ...extraEnv,
    });
    services.push(worker);
    return worker;
  };
  const jobs = startService('jobs', 'jobs', { ...shared, PORT: String(jobsPort), JOB_REAPER_INTERVAL_MS: '250' });
  services.push(jobs);
  const ready: Promise<void>[] = [waitUntilReady(`http://127.0.0.1:${jobsPort}/readyz`, jobs)];
  const upstreams: Record<string, string> = { JOBS_URL: `http://127.0.0.1:${jobsPort}` };
  products.forEach((product, index) => {
    const spec: { dir: string; urlVar: string; roleVar?: string; worker: boolean } = PRODUCT_SERVICES[product];
    const url = `http://127.0.0.1:${productPorts[index]}`;
    const api = startService(spec.worker ? `${product}-api` : product, spec.dir, {
      ...shared,
      ...(spec.worker && spec.roleVar ? { [spec.roleVar]: 'api' } : {}),
      PORT: String(productPorts[index]),
      ...(product === 'mcp' ? { MCP_API_URL: gatewayUrl } : {}),
      ...options.productEnv?.[product],
    });
    services.push(api);
    ready.push(waitUntilReady(`${url}/readyz`, api));
    upstreams[spec.urlVar] = url;
    productUrls[product] = url;
    if (spec.worker) startWorker({}, product);
  });
  const gateway = startService('gateway', 'gateway', { ...shared, PORT: String(gatewayPort), ...upstreams });
  services.push(gateway);
  ready.push(waitUntilReady(`${gatewayUrl}/readyz`, gateway));
  const stop = async () => {
    await Promise.all(services.map((service) => service.stop()));
  };
  try {
    await Promise.all(ready);
  } catch (error) {
    await stop();
    throw error;
  }
  const admin = adminOf(shared.DATABASE_URL ?? '');
  return {
    gatewayUrl,
    services,
    productUrls,
    admin,
    startWorker,
    async restart(service, readyUrl) {
      const again = startService(service.name, service.dir, service.env);
      const index = services.indexOf(service);
      if (index >= 0) services[index] = again;
      else services.push(again);
      if (readyUrl !== undefined) await waitUntilReady(readyUrl, again);
      return again;
    },
    tenantKey: (name) => tenantKeyOf(shared.DATABASE_URL ?? '', name),
    stop,
  };
}

/** The admin CLI against a database; returns its stdout. */
function adminOf(databaseUrl: string): (args: string[]) => string {
  return (args) => {
    const run = spawnSync(process.execPath, ['dist/admin/cli.js', ...args], {
      cwd: path.join(ROOT, 'services/gateway'),
      env: { PATH: process.env.PATH ?? '', DATABASE_URL: databaseUrl },
      encoding: 'utf8',
    });
    if (run.status !== 0) throw new Error(`admin ${args.join(' ')} failed: ${run.stderr}`);
    return run.stdout;
  };
}

/**
 * Makes a tenant, raises the limits that tests exceed and mints a key of all scopes, in one process: the key store's
 * functions that the admin CLI calls (@fin/api-keys, compiled, as the CLI runs it), without six CLI processes that
 * each load the store and Prisma, seconds of CPU per tenant. The CLI itself is run by `admin`. Prints the key.
 */
const TENANT_KEY_SCRIPT = `
require('node:v8').setFlagsFromString('--liftoff-only');
const { createKey, createTenant, setLimitOverride } = require('@fin/api-keys');
const { createPool } = require('@fin/db');
const [name, perMinute, ...products] = process.argv.slice(1);
const pool = createPool({ connectionString: process.env.DATABASE_URL, applicationName: 'fin-e2e-tenant', max: 1 });
(async () => {
  await createTenant(pool, name);
  for (const product of products) await setLimitOverride(pool, name, product, Number(perMinute));
  const { apiKey } = await createKey(pool, { tenant: name });
  process.stdout.write(apiKey);
})()
  .catch((error) => {
    process.stderr.write(String(error?.stack ?? error));
    process.exitCode = 1;
  })
  .finally(() => pool.end());
`;

/** A new tenant with a key of all scopes, and polling limits raised for tests. */
function tenantKeyOf(databaseUrl: string, name: string): string {
  // Tests poll faster than the default 600 status requests per minute allow, and make more jobs than the defaults.
  const products = ['jobs', 'news', 'stock-report', 'analysis'];
  const run = spawnSync(process.execPath, ['-e', TENANT_KEY_SCRIPT, name, '100000', ...products], {
    cwd: path.join(ROOT, 'services/gateway'),
    env: { PATH: process.env.PATH ?? '', DATABASE_URL: databaseUrl },
    encoding: 'utf8',
  });
  if (run.status !== 0) throw new Error(`creating tenant ${name} and its key failed: ${run.stderr}`);
  return run.stdout;
}

/**
 * The same system as `npm start` runs it: the compiled standalone launcher (services/standalone/dist/main.js),
 * every service a unit of one process that the gateway calls in-process, on the test's database and broker. Every
 * product runs (the units are always all there); the environment of each product asked for applies to the whole
 * process. There is no service to reach around the gateway, and no separate worker to start.
 */
async function startInProcessSystem(
  shared: Record<string, string>,
  workerEnv: Record<string, string>,
  options: SystemOptions,
): Promise<System> {
  const port = await freePort();
  const gatewayUrl = `http://127.0.0.1:${port}`;
  const productEnv = Object.assign({}, ...Object.values(options.productEnv ?? {})) as Record<string, string>;
  const env = { ...shared, ...productEnv, ...workerEnv, PORT: String(port), DATA_DIR: mkdtempSync(path.join(tmpdir(), 'fin-e2e-')) };
  const start = () => startProcess('standalone', 'standalone', ['dist/main.js'], env);
  const system = start();
  const services = [system];
  const stop = async () => {
    await Promise.all(services.map((service) => service.stop()));
    rmSync(env.DATA_DIR, { recursive: true, force: true });
  };
  try {
    await waitUntilReady(`${gatewayUrl}/readyz`, system, 60_000);
  } catch (error) {
    await stop();
    throw error;
  }
  const admin = adminOf(shared.DATABASE_URL ?? '');
  return {
    gatewayUrl,
    services,
    productUrls: {},
    admin,
    startWorker: () => {
      throw new Error('npm start runs its workers in its one process: there is no separate worker to start');
    },
    async restart(service, readyUrl) {
      const again = start();
      services[services.indexOf(service)] = again;
      await waitUntilReady(readyUrl ?? `${gatewayUrl}/readyz`, again, 60_000);
      return again;
    },
    tenantKey: (name) => tenantKeyOf(shared.DATABASE_URL ?? '', name),
    stop,
  };
}
