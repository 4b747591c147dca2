// The README's "Working on one service" steps, run as written: its code blocks are read from README.md, so an edit
// that breaks them breaks this test. As on a fresh machine, PATH has the machine's own Node first (20 here), not
// the project's Node 24: `npm run dev` must get the services onto Node 24 through the bootstrap by itself.
// What differs from a developer's run is only what keeps this test off everyone else's: a database, ports, a
// secrets folder and Kafka topics of its own (environment variables, which the steps let win), and the test broker
// instead of `npm run kafka:start`'s.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { AsyncJobResponse, JobStatusResponse } from '@fin/contracts';
import { TEST_KAFKA_BROKERS, uniqueName, waitFor } from '@fin/testing';
import pg from 'pg';
import { freePort } from '../src/system';

const ROOT = path.resolve(__dirname, '../..');
const ADMIN_URL = process.env.TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
/** Where the gateway finds each service that `npm run dev` can start, by the gateway's variable. */
const UPSTREAM_VARIABLES: Record<string, string> = {
  news: 'NEWS_URL',
  'stock-report': 'STOCK_REPORT_URL',
  analysis: 'ANALYSIS_URL',
  chat: 'CHAT_URL',
  jobs: 'JOBS_URL',
  portal: 'PORTAL_URL',
  mcp: 'MCP_URL',
};

/** The shell commands of the README section's code blocks: continuations joined, comments and blanks dropped. */
function readmeSteps(): string[] {
  const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const section = /^### Working on one service\n([\s\S]*?)(?=^##)/m.exec(readme)?.[1];
  if (section === undefined) throw new Error('README.md has no "### Working on one service" section');
  const blocks = [...section.matchAll(/^```sh\n([\s\S]*?)^```/gm)].map((match) => match[1] ?? '');
  return blocks
    .join('')
    .replace(/\\\n\s*/g, '')
    .split('\n')
    .map((line) => line.replace(/\s+#.*$/, '').trim())
    .filter((line) => line !== '');
}

/** PATH as a fresh machine has it: without the project's .tools and node_modules folders that the test runner adds. */
function machinePath(): string {
  return (process.env.PATH ?? '')
    .split(path.delimiter)
    .filter((entry) => entry !== '' && !entry.startsWith(ROOT) && !entry.includes(`${path.sep}node_modules${path.sep}`))
    .join(path.delimiter);
}

interface Command {
  child: ChildProcess;
  /** stdout and stderr as they came. */
  output(): string;
  stdout(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Runs a command line through sh, in a process group of its own, as a terminal runs a job. */
function run(line: string, env: Record<string, string>): Command {
  const child = spawn('sh', ['-c', line], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let output = '';
  let stdout = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-30_000);
  };
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout = (stdout + chunk.toString()).slice(-30_000);
    keep(chunk);
  });
  child.stderr?.on('data', keep);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return { child, output: () => output, stdout: () => stdout, exited };
}

async function finished(command: Command, timeoutMs = 30_000): Promise<{ code: number | null; output: string; stdout: string }> {
  const timer = setTimeout(() => command.child.kill('SIGKILL'), timeoutMs);
  const { code } = await command.exited;
  clearTimeout(timer);
  return { code, output: command.output(), stdout: command.stdout() };
}

/** Processes whose environment holds `marker` (a folder only this test's processes know), from /proc. */
function processesWith(marker: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/environ`, 'utf8').split('\0').includes(marker)) pids.push(Number(entry));
    } catch {
      // gone, or not ours
    }
  }
  return pids;
}

/** fetch, again while a service is restarting (watch mode restarts on any change in the checkout). */
async function fetchThroughRestarts(url: string, init: RequestInit = {}): Promise<Response> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    try {
      const res = await fetch(url, init);
      if (![502, 503, 504].includes(res.status) || Date.now() > deadline) return res;
      await res.arrayBuffer();
    } catch (error) {
      if (Date.now() > deadline) throw error;
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

const describeLinux = process.platform === 'linux' ? describe : describe.skip;

describeLinux("the README's steps for working on one service", () => {
  const steps = readmeSteps();
  const pathOfMachine = machinePath();
  const dataDir = mkdtempSync(path.join(tmpdir(), 'fin-dev-steps-'));
  const databaseName = `fin_t_${process.pid}_${randomBytes(4).toString('hex')}`;
  const databaseUrl = Object.assign(new URL(ADMIN_URL), { pathname: `/${databaseName}` }).toString();
  const marker = `DATA_DIR=${dataDir}`;
  /** What every command gets: a fresh machine's PATH, and what keeps this run apart from any other. */
  const baseEnv: Record<string, string> = {
    PATH: pathOfMachine,
    HOME: process.env.HOME ?? tmpdir(),
    ...(process.env.TMPDIR ? { TMPDIR: process.env.TMPDIR } : {}),
    DATA_DIR: dataDir,
  };
  const running: Command[] = [];

  afterAll(async () => {
    for (const pid of processesWith(marker)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await Promise.all(running.map((command) => command.exited));
    const admin = new pg.Client(ADMIN_URL);
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS "${databaseName}" WITH (FORCE)`).finally(() => admin.end());
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('start the broker, then each service with one command', () => {
    expect(steps[0]).toBe('npm run kafka:start');
    const services = steps.slice(1).filter((line) => line.startsWith('npm run dev'));
    expect(services).toEqual(expect.arrayContaining(['npm run dev -- news', 'npm run dev -- jobs', 'npm run dev -- gateway']));
  });

  it('name the services when asked for one that does not exist', async () => {
    const { code, output } = await finished(run('npm run dev -- nonesuch', baseEnv));
    expect(code).toBe(64);
    expect(output).toContain('unknown service "nonesuch"');
    expect(output).toContain('gateway, news, stock-report, analysis, chat, jobs, portal');
  });

  it("say in one line when Kafka is down, after naming the database the README's admin steps use", async () => {
    const closed = await freePort();
    const { code, output } = await finished(run('npm run dev -- news', { ...baseEnv, KAFKA_BROKERS: `127.0.0.1:${closed}` }));
    expect(code).toBe(69);
    const documented = /DATABASE_URL=(\S+) npm run admin/.exec(steps.join('\n'))?.[1];
    expect(output).toContain(`database ${documented}`);
    expect(output).toContain(`[dev] Kafka is not reachable at 127.0.0.1:${closed}: start a broker with "npm run kafka:start"`);
    expect(output).not.toMatch(/^\s+at /m);
  });

  it('run gateway, news and jobs on Node 24 from a machine with its own Node, and serve a news request through the gateway', async () => {
    // The three services start together, as three terminals would, and agree on the secrets the first one writes.
    rmSync(path.join(dataDir, 'dev.env'), { force: true });
    const machineNode = await finished(run('node -v', baseEnv));
    process.stdout.write(`dev steps: the machine's Node is ${machineNode.output.trim()}\n`);

    const devServices = steps.map((line) => /^npm run dev -- (\S+)$/.exec(line)?.[1]).filter((name) => name !== undefined);
    const ports = Object.fromEntries(await Promise.all(devServices.map(async (name) => [name, await freePort()] as const)));
    const upstreams = Object.fromEntries(
      devServices.filter((name) => UPSTREAM_VARIABLES[name]).map((name) => [UPSTREAM_VARIABLES[name]!, `http://127.0.0.1:${ports[name]}`]),
    );
    const shared = {
      ...baseEnv,
      DATABASE_URL: databaseUrl,
      KAFKA_BROKERS: TEST_KAFKA_BROKERS.join(','),
      KAFKA_TOPIC_PREFIX: `${uniqueName('dev-steps')}.`,
      METRICS_PORT: '0',
    };
    const gatewayUrl = `http://127.0.0.1:${ports.gateway}`;
    const started = new Map<string, Command>();
    for (const line of steps) {
      const name = /^npm run dev -- (\S+)$/.exec(line)?.[1];
      if (name === undefined) continue;
      const command = run(line, { ...shared, PORT: String(ports[name]), ...(name === 'gateway' ? upstreams : {}) });
      running.push(command);
      started.set(name, command);
    }
    await Promise.all(
      [...started].map(([name, command]) =>
        waitFor(
          async () => {
            if (command.child.exitCode !== null)
              throw new Error(`npm run dev -- ${name} exited (${command.child.exitCode}):\n${command.output()}`);
            return (await fetch(`http://127.0.0.1:${ports[name]}/readyz`).catch(() => undefined))?.status === 200;
          },
          { timeoutMs: 45_000, intervalMs: 200, what: `${name} to be ready:\n${command.output()}` },
        ),
      ),
    );
    for (const [name, command] of started) {
      // The bootstrap's Node ran the service, whatever Node the machine has.
      expect(command.output()).toMatch(new RegExp(`\\[dev\\] ${name} on Node v(2[2-9]|[3-9]\\d)\\.`));
    }
    const secrets = path.join(dataDir, 'dev.env');
    expect(statSync(secrets).mode & 0o777).toBe(0o600);
    expect(readFileSync(secrets, 'utf8')).toMatch(/^CUSTOMER_TOOLS_ENCRYPTION_KEY=k1:[A-Za-z0-9+/]{43}=$/m);

    // The key steps, against this test's database instead of the documented one.
    let apiKey = '';
    for (const line of steps.filter((step) => /^DATABASE_URL=\S+ npm run admin /.test(step))) {
      const { code, output, stdout } = await finished(run(line.replace(/^DATABASE_URL=\S+/, `DATABASE_URL=${databaseUrl}`), baseEnv));
      expect({ line, code, output }).toEqual({ line, code: 0, output: expect.any(String) });
      // npm's own lines come first; --json prints the key as the last thing on stdout.
      const json = /^\{[\s\S]*\}\s*$/m.exec(stdout)?.[0];
      if (json !== undefined) apiKey = (JSON.parse(json) as { api_key: string }).api_key;
    }
    expect(apiKey).toMatch(/^fin_/);

    // The documented request, to this test's gateway with the new key.
    const curl = steps.find((line) => line.startsWith('curl '));
    const request = /-X POST http:\/\/127\.0\.0\.1:8080(\S+) -H 'X-API-Key: fin_…' -H 'Content-Type: application\/json' -d '(.+)'$/.exec(
      curl ?? '',
    );
    if (!request) throw new Error(`no curl request in the README's steps:\n${steps.join('\n')}`);
    const headers = { 'X-API-Key': apiKey, 'Content-Type': 'application/json' };
    const accepted = await fetchThroughRestarts(`${gatewayUrl}${request[1]}`, { method: 'POST', headers, body: request[2] });
    expect(accepted.status).toBe(202);
    const job = AsyncJobResponse.parse(await accepted.json());
    // The worker takes the job from the real broker; the jobs service answers its status through the gateway.
    await waitFor(
      async () => {
        const status = await fetchThroughRestarts(`${gatewayUrl}${job.status_url}`, { headers });
        return status.status === 200 && JobStatusResponse.parse(await status.json()).status === 'completed';
      },
      { timeoutMs: 30_000, intervalMs: 250, what: 'the news job to complete' },
    );

    // Ctrl-C in each terminal: every service shuts down in order and nothing of this run is left behind.
    for (const command of started.values()) process.kill(-command.child.pid!, 'SIGINT');
    await Promise.all([...started.values()].map((command) => finished(command, 20_000)));
    for (const [name, command] of started) {
      expect({ name, stopped: /"exitCode":0,"msg":"stopped"/.test(command.output()) }).toEqual({ name, stopped: true });
    }
    await waitFor(() => processesWith(marker).length === 0, { timeoutMs: 10_000, what: 'every process of the run to end' });
  }, 110_000);
});
