// The service images, without a Docker engine: the Dockerfile's runtime stage is read instruction by instruction,
// and its build steps (the same commands) are run outside Docker for the gateway and portal images, whose results
// are then started with plain `node`: migrations, the admin CLI, /healthz and /readyz, the portal's static files,
// the metrics listener, the HEALTHCHECK script for API and worker roles, SIGTERM.
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createEmptyDatabase, type TestDatabase } from '@fin/testing';
import pg from 'pg';
import { DEPLOYABLES, NOT_DEPLOYED, REPO_ROOT, TEST_ONLY_VARIABLES, defaultPort, loadConfigShape } from './support/deployables';
import { execForm, parseDockerfile, stageEnv, type Stage } from './support/dockerfile';
import { ADMIN, APP, HEALTHCHECK, MIGRATE, MIGRATION_JOB, WAIT_FOR_SCHEMA } from './support/image-paths';
import { freePort, run, runOk, start, waitForOk } from './support/processes';

const { globalArgs, stages } = parseDockerfile(path.join(REPO_ROOT, 'Dockerfile'));
const runtime = stages.at(-1) as Stage;
const build = stages.find((stage) => stage.name === 'build') as Stage;
const args = (stage: Stage, keyword: string) =>
  stage.instructions.filter((instruction) => instruction.keyword === keyword).map((instruction) => instruction.args);

/** The build stage's commands as the Dockerfile writes them; the test below runs these, with SERVICE filled in. */
const BUILD = 'pnpm exec tsc -b "services/${SERVICE}/tsconfig.build.json"';
const ASSEMBLE = 'node infra/src/image/assemble.mjs "$SERVICE" /out';

describe('the Dockerfile', () => {
  test('builds every deployable from one file, parameterised by SERVICE, and knows no other service', () => {
    const folders = readdirSync(path.join(REPO_ROOT, 'services'));
    const deployed = DEPLOYABLES.map((deployable) => deployable.service);
    expect(folders.filter((folder) => !deployed.includes(folder)).sort()).toEqual(Object.keys(NOT_DEPLOYED).sort());
    for (const service of deployed) expect(existsSync(path.join(REPO_ROOT, 'services', service, 'src', 'main.ts'))).toBe(true);
    expect(args(build, 'ARG')).toContain('SERVICE');
    expect(args(runtime, 'ARG')).toContain('SERVICE');
  });

  test('runs the runtime stage on the slim Node 24 image, without the package managers', () => {
    expect(runtime.from).toBe('${NODE_IMAGE}');
    expect(globalArgs.NODE_IMAGE).toBe('node:24-slim');
    const runs = args(runtime, 'RUN');
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatch(/^rm -rf /);
    for (const removed of ['/usr/local/lib/node_modules/npm', '/usr/local/bin/npx', '/usr/local/bin/corepack'])
      expect(runs[0]).toContain(removed);
  });

  test('copies nothing into the runtime stage but the assembled tree', () => {
    expect(args(runtime, 'COPY')).toEqual([`--from=build /out ${APP}`]);
    expect(args(build, 'RUN')).toEqual(
      expect.arrayContaining([BUILD, ASSEMBLE, 'pnpm install --frozen-lockfile --offline', 'pnpm --filter @fin/db run generate']),
    );
  });

  test('runs as a numeric, non-root user', () => {
    const users = args(runtime, 'USER');
    expect(users).toHaveLength(1);
    const [uid, gid] = (users[0] ?? '').split(':').map(Number);
    expect(Number.isInteger(uid) && uid! > 0).toBe(true);
    expect(Number.isInteger(gid) && gid! > 0).toBe(true);
    // USER precedes CMD and HEALTHCHECK: both run as that user.
    const keywords = runtime.instructions.map((instruction) => instruction.keyword);
    expect(keywords.indexOf('USER')).toBeLessThan(keywords.indexOf('CMD'));
  });

  test('listens on every interface and starts the service with node, as production', () => {
    const env = stageEnv(runtime);
    expect(env).toMatchObject({ NODE_ENV: 'production', HOST: '0.0.0.0', METRICS_HOST: '0.0.0.0', FIN_SERVICE: '${SERVICE}' });
    // Source-mapped stack traces, and short minor GC pauses (the benchmarks run the services with the same flags).
    expect((env.NODE_OPTIONS ?? '').split(' ').sort()).toEqual(['--enable-source-maps', '--max-semi-space-size=4']);
    expect(args(runtime, 'WORKDIR')).toEqual([`${APP}/services/\${SERVICE}`]);
    expect(execForm(args(runtime, 'CMD')[0] ?? '')).toEqual(['node', 'dist/main.js']);
  });

  test("checks health with the image's own script, in node", () => {
    const [healthcheck] = args(runtime, 'HEALTHCHECK');
    expect(healthcheck).toMatch(/--interval=\d+s/);
    expect(execForm(healthcheck ?? '')).toEqual(HEALTHCHECK);
  });

  test('installs the pnpm of package.json "packageManager"', () => {
    const { packageManager } = JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { packageManager: string };
    const pnpmStage = stages.find((stage) => stage.name === 'pnpm') as Stage;
    expect(args(pnpmStage, 'RUN').join(' ')).toContain(` ${packageManager}`);
  });

  test('the healthcheck script knows the port every service listens on by default, and the metrics port of every worker', async () => {
    const output = await runOk(process.execPath, [
      '-p',
      `JSON.stringify(require(${JSON.stringify(path.join(REPO_ROOT, 'infra/src/image/healthcheck.cjs'))}))`,
    ]);
    const defaults: Record<string, number> = {};
    const metricsDefaults: Record<string, number> = {};
    for (const { service, roles } of DEPLOYABLES) {
      const shape = await loadConfigShape(service);
      defaults[service] = defaultPort(shape);
      if (roles.includes('worker')) metricsDefaults[service] = defaultPort(shape, 'METRICS_PORT');
    }
    expect(JSON.parse(output) as Record<string, Record<string, number>>).toEqual({
      DEFAULT_PORTS: defaults,
      DEFAULT_METRICS_PORTS: metricsDefaults,
    });
  });

  test('sets no test-only variable in any stage', () => {
    const declared = stages.flatMap((stage) => [...Object.keys(stageEnv(stage)), ...args(stage, 'ARG').map((arg) => arg.split('=')[0])]);
    for (const variable of TEST_ONLY_VARIABLES)
      expect({ variable, declared: declared.includes(variable) || JSON.stringify(stages).includes(variable) }).toEqual({
        variable,
        declared: false,
      });
  });
});

describe('.dockerignore', () => {
  const patterns = readFileSync(path.join(REPO_ROOT, '.dockerignore'), 'utf8')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));

  test('keeps local installs, builds, secrets and machine state out of the build context', () => {
    expect(patterns).toEqual(
      expect.arrayContaining(['**/node_modules', '**/dist', '.git', '.env', '.tools', '.data', 'packages/db/src/generated']),
    );
  });

  test('keeps what the build stage needs', () => {
    for (const needed of [
      'pnpm-lock.yaml',
      'pnpm-workspace.yaml',
      'package.json',
      'patches',
      'packages',
      'services',
      'infra',
      'infra/src',
      'infra/src/image',
    ]) {
      expect(patterns).not.toContain(needed);
    }
  });

  test('keeps the files the services read at run time beside their code', () => {
    // Docker leaves out a path when a pattern matches it or one of its parent folders; `!` patterns are not used.
    expect(patterns.filter((pattern) => pattern.startsWith('!'))).toEqual([]);
    const ignored = (file: string) => {
      const parts = file.split('/');
      return parts.some((_part, index) => patterns.some((pattern) => path.matchesGlob(parts.slice(0, index + 1).join('/'), pattern)));
    };
    const runtimeFiles = ['services/portal/static', 'packages/db/migrations', 'packages/ai/prompts'].flatMap((dir) =>
      readdirSync(path.join(REPO_ROOT, dir)).map((file) => `${dir}/${file}`),
    );
    expect(runtimeFiles.length).toBeGreaterThan(3);
    expect(runtimeFiles.filter(ignored)).toEqual([]);
    // The check itself: it sees what is left out.
    expect(['services/portal/test/app.test.ts', 'services/portal/node_modules/x', '.env'].every(ignored)).toBe(true);
  });
});

/**
 * The runtime trees of the images started below, built as the Dockerfile's build stage does, once for all tests:
 * the services' builds one after the other (they compile shared packages), then the trees assembled side by side.
 */
const BUILT_OUTSIDE_DOCKER = ['gateway', 'portal'];
let trees: Promise<Record<string, string>> | undefined;
let treesRoot: string | undefined;

function imageTrees(): Promise<Record<string, string>> {
  trees ??= (async () => {
    for (const service of BUILT_OUTSIDE_DOCKER)
      await runOk('sh', ['-c', BUILD], { cwd: REPO_ROOT, env: { ...process.env, SERVICE: service } });
    const root = mkdtempSync(path.join(tmpdir(), 'fin-image-'));
    treesRoot = root;
    const outs = await Promise.all(
      BUILT_OUTSIDE_DOCKER.map(async (service) => {
        const out = path.join(root, service, 'out');
        await runOk('sh', ['-c', ASSEMBLE.replace('/out', out)], { cwd: REPO_ROOT, env: { ...process.env, SERVICE: service } });
        return [service, out] as const;
      }),
    );
    return Object.fromEntries(outs);
  })();
  return trees;
}

afterAll(() => {
  if (treesRoot) rmSync(treesRoot, { recursive: true, force: true });
});

describe('the gateway image, built outside Docker', () => {
  const service = 'gateway';
  let out: string;
  let database: TestDatabase;
  const node = process.execPath;
  // What a container has: no development conditions, the image's NODE_OPTIONS rather than the test runner's, no
  // workspace around.
  const containerEnv = (extra: Record<string, string>): NodeJS.ProcessEnv => ({
    PATH: process.env.PATH,
    NODE_ENV: 'production',
    NODE_OPTIONS: stageEnv(runtime).NODE_OPTIONS,
    ...extra,
  });
  const inImage = (file: string) => path.join(out, path.relative(APP, file));

  beforeAll(async () => {
    [out, database] = await Promise.all([imageTrees().then((built) => built[service]!), createEmptyDatabase()]);
  }, 180_000);

  afterAll(async () => {
    await database?.drop();
  });

  test('holds the compiled service and its packages, the migration runner and the admin CLI, without sources', () => {
    for (const file of [`${APP}/services/gateway/dist/main.js`, MIGRATE[1]!, ADMIN[1]!, WAIT_FOR_SCHEMA[1]!, HEALTHCHECK[1]!]) {
      expect(existsSync(inImage(file))).toBe(true);
    }
    expect(readdirSync(inImage(`${APP}/packages/db/migrations`)).sort()).toEqual(
      readdirSync(path.join(REPO_ROOT, 'packages/db/migrations')).sort(),
    );
    expect(existsSync(inImage(`${APP}/packages/db/dist/generated/prisma/client.js`))).toBe(true);
    for (const dir of [`${APP}/services/gateway`, `${APP}/packages/db`, `${APP}/packages/http`]) {
      for (const buildOnly of ['src', 'test', 'tsconfig.json', 'tsconfig.build.json', 'jest.config.js'])
        expect(existsSync(path.join(inImage(dir), buildOnly))).toBe(false);
    }
    // Only the gateway's own closure: no product service, no test helpers.
    expect(readdirSync(inImage(`${APP}/services`))).toEqual(['gateway']);
    expect(readdirSync(inImage(`${APP}/packages`))).not.toContain('testing');
  });

  test('holds production dependencies only', () => {
    // .pnpm entries are `name@version…` or `@scope+name@version…`.
    const installed = readdirSync(path.join(out, 'node_modules/.pnpm'))
      .filter((entry) => entry !== 'node_modules' && entry !== 'lock.yaml')
      .map((entry) => entry.slice(0, entry.indexOf('@', 1)).replace('+', '/'));
    // Development tools, wherever they come from: test runners, compilers, linters, the Prisma CLI.
    for (const tool of ['typescript', 'jest', '@swc/core', 'eslint', 'tsx', 'supertest', 'prisma', '@types/jest', 'kustomize']) {
      expect(installed).not.toContain(tool);
    }
    // And every devDependency of the workspace, unless a production package needs it too.
    const workspaceDirs = ['services', 'packages'].flatMap((group) =>
      readdirSync(path.join(out, group)).map((name) => path.join(group, name)),
    );
    const manifests = ['.', ...workspaceDirs].map((dir) => path.join(REPO_ROOT, dir, 'package.json'));
    const neededAtRuntime = new Set<string>();
    for (const entry of readdirSync(path.join(out, 'node_modules/.pnpm/node_modules'), { withFileTypes: true })) {
      const dirs = entry.name.startsWith('@')
        ? readdirSync(path.join(out, 'node_modules/.pnpm/node_modules', entry.name)).map((name) => `${entry.name}/${name}`)
        : [entry.name];
      for (const dir of dirs) {
        const manifest = path.join(out, 'node_modules/.pnpm/node_modules', dir, 'package.json');
        if (!existsSync(manifest)) continue;
        for (const dependency of Object.keys(
          (JSON.parse(readFileSync(manifest, 'utf8')) as { dependencies?: Record<string, string> }).dependencies ?? {},
        ))
          neededAtRuntime.add(dependency);
      }
    }
    for (const manifest of manifests) {
      const { devDependencies = {} } = JSON.parse(readFileSync(manifest, 'utf8')) as { devDependencies?: Record<string, string> };
      for (const dependency of Object.keys(devDependencies)) {
        if (!neededAtRuntime.has(dependency))
          expect({ dependency, installed: installed.includes(dependency) }).toEqual({ dependency, installed: false });
      }
    }
  });

  test('migrates a new database with its migration runner, which wait-for-schema waits for', async () => {
    const env = containerEnv({ DATABASE_URL: database.url, SCHEMA_WAIT_TIMEOUT_S: '1' });
    const waiting = await run(node, [inImage(WAIT_FOR_SCHEMA[1]!)], { env });
    expect(waiting.code).toBe(1);
    expect(waiting.output).toContain('waiting for the migration Job to apply');

    const migrated = await runOk(node, [inImage(MIGRATE[1]!), ...MIGRATE.slice(2)], { env });
    expect(migrated).toContain('[migrate] applied');
    const ready = await run(node, [inImage(WAIT_FOR_SCHEMA[1]!)], { env });
    expect(ready.output).toContain('has every migration this image knows');
    expect(ready.code).toBe(0);
  });

  test("the Kubernetes migration Job's command migrates, then is a no-op, and succeeds on a database a newer release migrated, which the runner alone refuses", async () => {
    // MIGRATION_JOB as the container runs it, with the image's paths where this tree has them.
    const [shell, flag, script] = MIGRATION_JOB as [string, string, string];
    const job = [flag, script.replaceAll(`${APP}/`, `${inImage(APP)}/`)];
    const env = containerEnv({ SCHEMA_WAIT_TIMEOUT_S: '1', PATH: `${path.dirname(node)}:${process.env.PATH ?? ''}` });
    const fresh = await createEmptyDatabase();
    try {
      const first = await runOk(shell, job, { env: { ...env, DATABASE_URL: fresh.url } });
      expect(first).toContain('[migrate] applied');
      const again = await runOk(shell, job, { env: { ...env, DATABASE_URL: fresh.url } });
      expect(again).toContain('has every migration this image knows');
      expect(again).not.toContain('[migrate]');
      // A newer release migrated the database (a rollback recreates this release's Job afterwards).
      const client = new pg.Client({ connectionString: fresh.url });
      await client.connect();
      try {
        await client.query(`INSERT INTO pgmigrations (name, run_on) VALUES ('9999999999999_from-a-newer-release', now())`);
      } finally {
        await client.end();
      }
      const refused = await run(node, [inImage(MIGRATE[1]!), ...MIGRATE.slice(2)], { env: { ...env, DATABASE_URL: fresh.url } });
      expect(refused.code).not.toBe(0);
      const rolledBack = await run(shell, job, { env: { ...env, DATABASE_URL: fresh.url } });
      expect({ code: rolledBack.code, output: rolledBack.output }).toEqual({
        code: 0,
        output: expect.stringContaining('has every migration this image knows'),
      });
    } finally {
      await fresh.drop();
    }
  });

  test('serves /healthz and /readyz under plain node, agrees with the HEALTHCHECK, accepts keys made by the admin CLI, and stops on SIGTERM', async () => {
    const env = containerEnv({ DATABASE_URL: database.url });
    await runOk(node, [inImage(ADMIN[1]!), 'tenants', 'create', 'image-test'], { env });
    const created = JSON.parse(await runOk(node, [inImage(ADMIN[1]!), 'keys', 'create', '--tenant', 'image-test', '--json'], { env })) as {
      api_key: string;
    };

    const port = await freePort();
    const gateway = start(node, ['dist/main.js'], {
      cwd: inImage(`${APP}/services/gateway`),
      env: containerEnv({
        DATABASE_URL: database.url,
        HOST: '127.0.0.1',
        PORT: String(port),
        METRICS_HOST: '127.0.0.1',
        METRICS_PORT: '0',
        INTERNAL_SIGNING_SECRET: 'x'.repeat(64),
        LOG_LEVEL: 'warn',
      }),
    });
    try {
      await waitForOk(`http://127.0.0.1:${port}/healthz`, gateway);
      expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);

      const healthcheck = (on: number) =>
        run(node, [inImage(HEALTHCHECK[1]!)], { env: containerEnv({ FIN_SERVICE: service, PORT: String(on) }) });
      expect((await healthcheck(port)).code).toBe(0);
      expect((await healthcheck(await freePort())).code).toBe(1);

      // The key is accepted (the jobs service is not running, so the gateway answers 503, not 401).
      const status = await fetch(`http://127.0.0.1:${port}/api/jobs/news/00000000-0000-4000-8000-000000000000/status`, {
        headers: { 'X-API-Key': created.api_key },
      });
      expect(status.status).toBe(503);
      const anonymous = await fetch(`http://127.0.0.1:${port}/api/jobs/news/00000000-0000-4000-8000-000000000000/status`);
      expect(anonymous.status).toBe(401);
    } finally {
      expect(await gateway.stop()).toBe(0);
    }
  });
});

describe('the portal image, built outside Docker', () => {
  const service = 'portal';
  let out: string;
  let database: TestDatabase;
  const node = process.execPath;
  const containerEnv = (extra: Record<string, string>): NodeJS.ProcessEnv => ({
    PATH: process.env.PATH,
    NODE_ENV: 'production',
    NODE_OPTIONS: stageEnv(runtime).NODE_OPTIONS,
    ...extra,
  });
  const inImage = (file: string) => path.join(out, path.relative(APP, file));

  beforeAll(async () => {
    [out, database] = await Promise.all([imageTrees().then((built) => built[service]!), createEmptyDatabase()]);
  }, 180_000);

  afterAll(async () => {
    await database?.drop();
  });

  test("holds the portal's static files beside its compiled code, and no sources", () => {
    const staticDir = path.join(REPO_ROOT, 'services/portal/static');
    for (const file of readdirSync(staticDir)) {
      expect({
        file,
        content:
          readFileSync(inImage(`${APP}/services/portal/static/${file}`), 'utf8') === readFileSync(path.join(staticDir, file), 'utf8'),
      }).toEqual({ file, content: true });
    }
    for (const buildOnly of ['src', 'test', 'tsconfig.json', 'jest.config.js'])
      expect(existsSync(path.join(inImage(`${APP}/services/portal`), buildOnly))).toBe(false);
    expect(readdirSync(inImage(`${APP}/services`))).toEqual(['portal']);
  });

  test("serves its pages' static files, /healthz, /readyz and the metrics listener under plain node; the HEALTHCHECK agrees, for API and worker roles", async () => {
    const [port, metricsPort] = [await freePort(), await freePort()];
    const portal = start(node, ['dist/main.js'], {
      cwd: inImage(`${APP}/services/portal`),
      env: containerEnv({
        DATABASE_URL: database.url,
        HOST: '127.0.0.1',
        PORT: String(port),
        METRICS_HOST: '127.0.0.1',
        METRICS_PORT: String(metricsPort),
        INTERNAL_SIGNING_SECRET: 'x'.repeat(64),
        PORTAL_SESSION_SECRET: 'y'.repeat(64),
        CUSTOMER_TOOLS_ENCRYPTION_KEY: `k1:${Buffer.alloc(32, 7).toString('base64')}`,
        LOG_LEVEL: 'warn',
      }),
    });
    try {
      await waitForOk(`http://127.0.0.1:${port}/healthz`, portal);
      expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);
      // Read from static/ at start: the portal would not have started without them.
      const css = await fetch(`http://127.0.0.1:${port}/portal/static/portal.css`);
      expect(css.status).toBe(200);
      expect(await css.text()).toBe(readFileSync(path.join(REPO_ROOT, 'services/portal/static/portal.css'), 'utf8'));
      expect((await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).status).toBe(200);
      expect((await fetch(`http://127.0.0.1:${metricsPort}/healthz`)).status).toBe(200);

      const healthcheck = (env: Record<string, string>) => run(node, [inImage(HEALTHCHECK[1]!)], { env: containerEnv(env) });
      expect((await healthcheck({ FIN_SERVICE: service, PORT: String(port) })).code).toBe(0);
      expect((await healthcheck({ FIN_SERVICE: service, PORT: String(await freePort()) })).code).toBe(1);
      // A worker role has no API port: the script asks the metrics listener's /healthz (here the portal's).
      expect(
        (await healthcheck({ FIN_SERVICE: 'news', NEWS_ROLE: 'worker', PORT: String(await freePort()), METRICS_PORT: String(metricsPort) }))
          .code,
      ).toBe(0);
      expect(
        (await healthcheck({ FIN_SERVICE: 'news', NEWS_ROLE: 'worker', PORT: String(port), METRICS_PORT: String(await freePort()) })).code,
      ).toBe(1);
    } finally {
      expect(await portal.stop()).toBe(0);
    }
  });
});
