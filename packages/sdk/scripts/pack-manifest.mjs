// npm pack (and npm publish) write package.json as it is on disk: they ignore publishConfig, which pnpm applies,
// so an `npm pack` of this folder pointed `types` and `exports` at ./src (the workspace's development entry, not in
// the tarball). `prepack` writes the manifest a user gets, the same whichever tool packs (publishConfig applied,
// no workspace-only fields); `postpack` puts the workspace's manifest back.
// `node scripts/pack-manifest.mjs prepack|postpack|print`: print writes nothing and prints the packed manifest.
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const dir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const manifestPath = path.join(dir, 'package.json');
const savedPath = path.join(dir, 'package.workspace.json');

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
  // A pack that failed before its postpack left the saved manifest: that one is the workspace's.
  if (!existsSync(savedPath)) renameSync(manifestPath, savedPath);
  writeFileSync(manifestPath, `${JSON.stringify(packedManifest(JSON.parse(readFileSync(savedPath, 'utf8'))), null, 2)}\n`);
} else if (mode === 'postpack') {
  if (existsSync(savedPath)) renameSync(savedPath, manifestPath);
} else {
  console.error('usage: node scripts/pack-manifest.mjs prepack|postpack|print');
  process.exit(2);
}
