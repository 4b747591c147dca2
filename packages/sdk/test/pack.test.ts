// The package as npm users get it: built, packed with `pnpm pack` (and `npm pack`, which must give the same manifest: the
// prepack script applies publishConfig for it), installed from the
// tarball into a scratch project outside the workspace, type-checked there with only the DOM library (no Node
// types, no workspace packages), and loaded with require() and import.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const PACKAGE_DIR = path.join(__dirname, '..');
const tsc = require.resolve('typescript/bin/tsc');

function run(command: string, args: string[], cwd: string): string {
  const result = spawnSync(command, args, { cwd, encoding: 'utf8', env: { ...process.env, npm_config_update_notifier: 'false' } });
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed (${result.status}):\n${result.stdout}\n${result.stderr}`);
  return result.stdout;
}

describe('the packed package', () => {
  let scratch: string;
  let tarball: string;

  beforeAll(() => {
    scratch = mkdtempSync(path.join(tmpdir(), 'fin-sdk-pack-'));
    run(process.execPath, [tsc, '-b', 'tsconfig.build.json'], PACKAGE_DIR);
    run('pnpm', ['pack', '--pack-destination', scratch], PACKAGE_DIR);
    const name = readdirSync(scratch).find((file) => file.endsWith('.tgz'));
    if (name === undefined) throw new Error('pnpm pack wrote no tarball');
    tarball = path.join(scratch, name);
  }, 120_000);

  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it('has the same manifest from `npm pack` as from `pnpm pack`: types and conditions on dist, nothing of src', () => {
    const manifestOf = (file: string, into: string) => {
      run('mkdir', ['-p', into], scratch);
      run('tar', ['-xzf', file, '-C', into, 'package/package.json'], scratch);
      return JSON.parse(readFileSync(path.join(into, 'package/package.json'), 'utf8')) as Record<string, unknown>;
    };
    const npmDir = path.join(scratch, 'npm');
    run('mkdir', ['-p', npmDir], scratch);
    run('npm', ['pack', '--pack-destination', npmDir], PACKAGE_DIR);
    const npmTarball = readdirSync(npmDir).find((file) => file.endsWith('.tgz'));
    if (npmTarball === undefined) throw new Error('npm pack wrote no tarball');
    const byNpm = manifestOf(path.join(npmDir, npmTarball), path.join(scratch, 'npm-manifest'));
    const byPnpm = manifestOf(tarball, path.join(scratch, 'pnpm-manifest'));
    expect(byNpm).toEqual(byPnpm);
    expect(JSON.stringify(byNpm)).not.toMatch(/src\/|workspace:|development/);
    // The workspace's own manifest is back once packing is done.
    expect(JSON.parse(readFileSync(path.join(PACKAGE_DIR, 'package.json'), 'utf8'))).toHaveProperty('publishConfig');
  });

  it('holds the compiled code, its declarations, the README and the licence, and no sources or workspace references', () => {
    const files = run('tar', ['-tzf', tarball], scratch).split('\n').filter(Boolean).sort();
    expect(files).toEqual(
      expect.arrayContaining([
        'package/LICENSE',
        'package/README.md',
        'package/dist/index.js',
        'package/dist/index.d.ts',
        'package/dist/index.mjs',
        'package/dist/index.d.mts',
        'package/package.json',
      ]),
    );
    expect(files.filter((file) => /\.(m?ts|map)$/.test(file) && !/\.d\.m?ts$/.test(file))).toEqual([]);
    expect(
      files.filter((file) => file.includes('tsbuildinfo') || file.startsWith('package/src/') || file.startsWith('package/test/')),
    ).toEqual([]);

    run('tar', ['-xzf', tarball, '-C', scratch, 'package/package.json'], scratch);
    const manifest = JSON.parse(readFileSync(path.join(scratch, 'package/package.json'), 'utf8')) as Record<string, unknown>;
    expect(manifest).toMatchObject({ name: '@financial-intelligence/sdk', license: 'MIT', types: './dist/index.d.ts' });
    expect(manifest.private).toBeUndefined();
    expect(manifest.dependencies).toBeUndefined();
    expect(manifest.exports).toEqual({
      '.': {
        import: { types: './dist/index.d.mts', default: './dist/index.mjs' },
        require: { types: './dist/index.d.ts', default: './dist/index.js' },
      },
      './package.json': './package.json',
    });
  });

  it('installs outside the workspace, type-checks against the DOM library alone, and loads with require and import', () => {
    const project = path.join(scratch, 'project');
    run('mkdir', ['-p', project], scratch);
    writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'scratch', version: '1.0.0', private: true }));
    run('pnpm', ['add', '--offline', '--ignore-workspace', tarball], project);
    writeFileSync(
      path.join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          noEmit: true,
          target: 'ES2022',
          module: 'nodenext',
          moduleResolution: 'nodenext',
          lib: ['ES2022', 'DOM', 'DOM.Iterable'],
          types: [],
          skipLibCheck: false,
        },
        files: ['index.ts', 'esm.mts'],
      }),
    );
    writeFileSync(
      path.join(project, 'index.ts'),
      `import { FinancialIntelligence, RateLimitError, JobFailedError, type ChatEvent, type NewsResult } from '@financial-intelligence/sdk';

const client = new FinancialIntelligence({ apiKey: 'fin_example', baseUrl: 'https://api.example.com' });

export async function news(): Promise<NewsResult> {
  return client.news.create({ symbols: ['AAPL'], n: 3 }, { cacheControl: 'no-cache' }).result();
}

export async function chat(): Promise<string> {
  let text = '';
  for await (const event of client.chat.stream({ message: 'Hello' })) {
    const typed: ChatEvent = event;
    if (typed.event === 'token') text += typed.data.content;
  }
  return text;
}

export function describe(error: unknown): string | undefined {
  if (error instanceof RateLimitError) return error.rateLimit.reset?.toISOString();
  if (error instanceof JobFailedError) return error.type;
  return undefined;
}

// @ts-expect-error n is a number
void client.news.create({ symbols: ['AAPL'], n: 'five' });
`,
    );
    // The ES module entry's declarations, as an ES module sees them.
    writeFileSync(
      path.join(project, 'esm.mts'),
      `import { FinancialIntelligence, APIError, type StockReportResult } from '@financial-intelligence/sdk';

const client = new FinancialIntelligence({ apiKey: 'fin_example', baseUrl: 'https://api.example.com' });
export const report: Promise<StockReportResult> = client.stockReport.create({ symbols: ['AAPL', 'MSFT'] }).result();
export const isApiError = (error: unknown): boolean => error instanceof APIError;
`,
    );
    run(process.execPath, [tsc, '-p', 'tsconfig.json'], project);
    const check =
      "const client = new sdk.FinancialIntelligence({ apiKey: 'k', baseUrl: 'http://127.0.0.1:1' }); " +
      "console.log(typeof client.news.create, typeof client.chat.stream, new sdk.RateLimitError(429, { detail: 'd', status_code: 429, type: 'rate_limit_exceeded' }, new Headers()) instanceof sdk.APIError);";
    expect(run(process.execPath, ['-e', `const sdk = require('@financial-intelligence/sdk'); ${check}`], project).trim()).toBe(
      'function function true',
    );
    expect(
      run(
        process.execPath,
        ['--input-type=module', '-e', `import * as named from '@financial-intelligence/sdk'; const sdk = named; ${check}`],
        project,
      ).trim(),
    ).toBe('function function true');
    // import gets the ES module entry, whose classes are the CommonJS build's own: one copy either way.
    const sameClasses =
      "import { createRequire } from 'node:module'; import { APIError } from '@financial-intelligence/sdk'; " +
      "const required = createRequire(process.cwd() + '/')('@financial-intelligence/sdk'); " +
      "console.log(import.meta.resolve('@financial-intelligence/sdk').endsWith('/dist/index.mjs'), APIError === required.APIError);";
    expect(run(process.execPath, ['--input-type=module', '-e', sameClasses], project).trim()).toBe('true true');
  }, 120_000);

  it('builds before packing, and packs nothing from sources that do not build', () => {
    // A copy of the package without dist/, beside the base config it extends; TypeScript found through NODE_PATH.
    const root = path.join(scratch, 'unbuilt');
    const copy = path.join(root, 'packages/sdk');
    run('mkdir', ['-p', copy], scratch);
    run('cp', ['-r', 'src', 'scripts', 'package.json', 'tsconfig.build.json', 'README.md', 'LICENSE', copy], PACKAGE_DIR);
    run('cp', [path.join(PACKAGE_DIR, '../../tsconfig.base.json'), root], scratch);
    const nodePath = path.dirname(path.dirname(path.dirname(tsc)));
    const pack = (into: string) =>
      spawnSync('npm', ['pack', '--pack-destination', into], {
        cwd: copy,
        encoding: 'utf8',
        env: { ...process.env, NODE_PATH: nodePath, npm_config_update_notifier: 'false' },
      });
    const packed = pack(root);
    expect(packed.status).toBe(0);
    const name = readdirSync(root).find((file) => file.endsWith('.tgz'));
    expect(run('tar', ['-tzf', path.join(root, name ?? 'none'), 'package/dist/index.js'], root).trim()).toBe('package/dist/index.js');

    writeFileSync(path.join(copy, 'src/broken.ts'), 'export const broken: number = "not a number";\n');
    rmSync(path.join(copy, 'dist'), { recursive: true, force: true });
    const refused = pack(path.join(root, 'refused'));
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toContain('The SDK did not build');
    // The workspace's manifest is put back either way (the refusal comes before it is replaced).
    expect(JSON.parse(readFileSync(path.join(copy, 'package.json'), 'utf8'))).toHaveProperty('publishConfig');
  }, 120_000);
});
