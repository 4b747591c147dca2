// npm pack (and npm publish) write package.json as it is on disk: they ignore publishConfig, which pnpm applies,
// so an `npm pack` of this folder pointed `types` and `exports` at ./src (the workspace's development entry, not in
// the tarball). `prepack` writes the manifest a user gets, the same whichever tool packs (publishConfig applied,
// no workspace-only fields), after building the package; `postpack` puts the workspace's manifest back.
// `node scripts/pack-manifest.mjs prepack|postpack|print`: print writes nothing and prints the packed manifest.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const dir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const manifestPath = path.join(dir, 'package.json');
const savedPath = path.join(dir, 'package.workspace.json');
/** What the packed manifest's exports name: a tarball without them is no package. */
const ENTRY_POINTS = ['dist/index.js', 'dist/index.mjs', 'dist/index.d.ts', 'dist/index.d.mts'];

/** The manifest of the packed package: publishConfig's fields applied, nothing that only the workspace reads. */
function packedManifest(manifest) {
  const packed = { ...manifest, ...manifest.publishConfig };
  for (const field of ['publishConfig', 'devDependencies', 'scripts', 'access', 'registry', 'tag']) delete packed[field];
  return packed;
}

const mode = process.argv[2];
if (mode === 'print') {
  process.stdout.write(`${JSON.stringify(packedManifest(JSON.parse(readFileSync(manifestPath, 'utf8'))), null, 2)}\n`);
} else if (mode === 'prepack') {
  // Pack what the sources say: build first (tsc -b does nothing when dist/ is current), and refuse to pack a package
  // without its compiled entry points (a pack without a build once exited 0 with three files and no dist/).
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const build = spawnSync(process.execPath, [tsc, '-b', 'tsconfig.build.json'], { cwd: dir, stdio: 'inherit' });
  if (build.status !== 0) {
    console.error('The SDK did not build (tsc -b tsconfig.build.json): nothing packed.');
    process.exit(1);
  }
  const missing = ENTRY_POINTS.filter((file) => !existsSync(path.join(dir, file)));
  if (missing.length > 0) {
    console.error(`The build left no ${missing.join(', ')}: nothing packed.`);
    process.exit(1);
  }
  // A pack that failed before its postpack left the saved manifest: that one is the workspace's.
  if (!existsSync(savedPath)) renameSync(manifestPath, savedPath);
  writeFileSync(manifestPath, `${JSON.stringify(packedManifest(JSON.parse(readFileSync(savedPath, 'utf8'))), null, 2)}\n`);
} else if (mode === 'postpack') {
  if (existsSync(savedPath)) renameSync(savedPath, manifestPath);
} else {
  console.error('usage: node scripts/pack-manifest.mjs prepack|postpack|print');
  process.exit(2);
}
