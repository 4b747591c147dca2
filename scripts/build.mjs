// `npm run build`: every package and service compiled to its dist/ by one `tsc -b` over the root
// tsconfig.build.json, after bringing the build graph in line with the workspace (scripts/sync-build-references.mjs,
// so a package added since the last commit is built too). tsc's own up-to-date check makes a second run cheap: it
// compares each project's inputs with its dist/.tsbuildinfo and compiles only what changed. `npm start` and the
// benchmarks call `build()` before they run dist/. Extra arguments go to tsc (e.g. `npm run build -- --verbose`).
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { syncBuildReferences } from './sync-build-references.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Builds what is out of date; returns tsc's exit code (0 when everything compiled). Output goes to `stdio`. */
export function build({ args = [], stdio = 'inherit' } = {}) {
  syncBuildReferences();
  const tsc = createRequire(path.join(root, 'package.json')).resolve('typescript/bin/tsc');
  const run = spawnSync(process.execPath, [tsc, '-b', path.join(root, 'tsconfig.build.json'), ...args], { cwd: root, stdio });
  if (run.error) throw run.error;
  return run.status ?? 1;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.exitCode = build({ args: process.argv.slice(2) });
