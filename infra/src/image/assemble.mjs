#!/usr/bin/env node
// Assembles the runtime tree of one service's image from a built workspace (after `pnpm install`, the Prisma
// client generation and `pnpm --filter-prod "@fin/<service>..." run build`):
//
//   node infra/src/image/assemble.mjs <service> <out-dir>
//
// The Dockerfile's build stage runs exactly this, and infra/test/image.test.ts runs it outside Docker, so what
// the test starts is what the image holds. The tree keeps the workspace layout (/app/services/<service>,
// /app/packages/<name>), so the commands in docs/deployment.md are the same in every image.
//
// 1. The service and the workspace packages it needs at run time (its `dependencies`, followed transitively;
//    devDependencies are not followed), each with package.json, its compiled dist/ and any other run-time files
//    (packages/db/migrations, packages/ai/prompts), but without sources, tests and build configuration.
// 2. Their production dependencies, installed by pnpm from the workspace lockfile (frozen: the image runs the
//    versions the tests ran) with --prod and --no-optional. In this lockfile the optional entries are optional
//    peers (the Prisma CLI and TypeScript, via @prisma/client) and platform binaries no service needs; installing
//    them would triple the image.
// 3. The image's own scripts (healthcheck, wait-for-schema) in bin/.
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..', '..', '..');
const [service, outArg] = process.argv.slice(2);
if (!service || !outArg) {
  process.stderr.write('usage: node infra/src/image/assemble.mjs <service> <out-dir>\n');
  process.exit(64);
}
const out = path.resolve(outArg);
const say = (message) => process.stderr.write(`[assemble] ${message}\n`);

// Top-level entries of a package folder that are needed only to build or test it; everything else ships.
const BUILD_ONLY = new Set(['node_modules', 'src', 'test', 'prisma', 'prisma.config.ts', 'jest.config.js', 'README.md']);

/** Whether `file` (inside the package folder `dir`) stays out of the image. */
function isBuildOnly(dir, file) {
  const relative = path.relative(dir, file);
  if (relative.endsWith('.tsbuildinfo')) return true;
  if (relative === '' || relative.includes(path.sep)) return false;
  return BUILD_ONLY.has(relative) || /^tsconfig.*\.json$/.test(relative);
}

/** Every workspace project by package name, as pnpm sees the workspace. */
function workspaceProjects() {
  const listed = JSON.parse(execFileSync('pnpm', ['ls', '--recursive', '--depth', '-1', '--json'], { cwd: root, encoding: 'utf8' }));
  return new Map(listed.map((project) => [project.name, project.path]));
}

/** The service and the workspace packages it depends on at run time, transitively. */
function runtimeClosure(projects, entry) {
  const seen = new Map();
  const queue = [entry];
  while (queue.length > 0) {
    const name = queue.shift();
    if (seen.has(name)) continue;
    const dir = projects.get(name);
    if (!dir) throw new Error(`${name} is not a workspace project`);
    const manifest = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'));
    seen.set(name, dir);
    for (const [dependency, version] of Object.entries(manifest.dependencies ?? {})) {
      if (String(version).startsWith('workspace:')) queue.push(dependency);
    }
  }
  return seen;
}

const projects = workspaceProjects();
const closure = runtimeClosure(projects, `@fin/${service}`);
if (existsSync(out) && readdirSync(out).length > 0) throw new Error(`${out} is not empty`);
mkdirSync(out, { recursive: true });

// The workspace root's manifest, lockfile and settings (patched dependencies), for a frozen install of the subset.
for (const file of ['package.json', 'pnpm-lock.yaml', 'pnpm-workspace.yaml', '.npmrc', 'patches']) {
  if (existsSync(path.join(root, file))) cpSync(path.join(root, file), path.join(out, file), { recursive: true });
}
for (const [name, dir] of closure) {
  if (!existsSync(path.join(dir, 'dist')))
    throw new Error(`${name} has no dist/: build it first (pnpm exec tsc -b services/${service}/tsconfig.build.json)`);
  const target = path.join(out, path.relative(root, dir));
  cpSync(dir, target, { recursive: true, filter: (source) => !isBuildOnly(dir, source) });
}
say(`@fin/${service} and ${[...closure.keys()].filter((name) => name !== `@fin/${service}`).join(', ')}`);

execFileSync(
  'pnpm',
  ['install', '--frozen-lockfile', '--prod', '--no-optional', '--offline', '--ignore-scripts', '--reporter=append-only'],
  { cwd: out, stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, CI: 'true' } },
);

// Install inputs are not needed to run; the lockfile would also make image scanners report packages the image
// does not contain (node_modules/.pnpm/lock.yaml lists what it does).
for (const file of ['pnpm-lock.yaml', 'pnpm-workspace.yaml', '.npmrc', 'patches'])
  rmSync(path.join(out, file), { recursive: true, force: true });
mkdirSync(path.join(out, 'bin'));
for (const script of ['healthcheck.cjs', 'wait-for-schema.cjs']) cpSync(path.join(here, script), path.join(out, 'bin', script));
say(`runtime tree in ${out}`);
