// Keeps every package's tsconfig.build.json `references` equal to its @fin/* runtime dependencies, so `tsc -b`
// builds dependencies first. Run after changing dependencies: `node scripts/sync-build-references.mjs`
// (`--check` exits 1 instead of writing, as the test script does).
import { readFileSync, readdirSync, writeFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const check = process.argv.includes('--check');
const dirs = ['packages', 'services'].flatMap((group) =>
  readdirSync(path.join(root, group)).map((name) => path.join(group, name)),
);
const byName = new Map();
for (const dir of dirs) {
  const file = path.join(root, dir, 'package.json');
  if (existsSync(file)) byName.set(JSON.parse(readFileSync(file, 'utf8')).name, dir);
}
let stale = [];
for (const dir of dirs) {
  const configFile = path.join(root, dir, 'tsconfig.build.json');
  if (!existsSync(configFile)) continue;
  const pkg = JSON.parse(readFileSync(path.join(root, dir, 'package.json'), 'utf8'));
  const references = Object.keys(pkg.dependencies ?? {})
    .filter((name) => byName.has(name))
    .sort()
    .map((name) => ({ path: path.relative(path.join(root, dir), path.join(root, byName.get(name), 'tsconfig.build.json')) }));
  const config = JSON.parse(readFileSync(configFile, 'utf8'));
  const next = { ...config, references };
  if (references.length === 0) delete next.references;
  if (JSON.stringify(next) !== JSON.stringify(config)) {
    stale.push(dir);
    if (!check) writeFileSync(configFile, `${JSON.stringify(next, null, 2)}\n`);
  }
}
if (stale.length > 0) {
  console.log(`${check ? 'Out of date' : 'Updated'}: ${stale.join(', ')}`);
  if (check) process.exit(1);
}
