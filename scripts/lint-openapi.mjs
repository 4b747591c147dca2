// Lints the OpenAPI document every running system serves at /api/openapi.json with Redocly CLI's recommended rules
// and the configuration we publish for consumers (redocly.yaml at the repository root), as a consumer's CI would.
// The document is generated from the contracts (createOpenApiDocument, what the gateway serves), written to a
// temporary file and linted there; the lint lane of scripts/test.sh runs this (`npm run lint:openapi`).
// `--output <file>` keeps the document instead (for a look at what was linted).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { createOpenApiDocument } = await import(path.join(root, 'packages/contracts/src/index.ts'));

const outputAt = process.argv.indexOf('--output');
const kept = outputAt >= 0 ? process.argv[outputAt + 1] : undefined;
const folder = kept === undefined ? mkdtempSync(path.join(tmpdir(), 'fin-openapi-')) : undefined;
const file = kept === undefined ? path.join(folder, 'openapi.json') : path.resolve(kept);
try {
  // The document as the gateway serves it (services/gateway/src/app.ts).
  writeFileSync(file, `${JSON.stringify(createOpenApiDocument(), null, 2)}\n`);
  const redocly = path.join(root, 'node_modules', '.bin', 'redocly');
  const result = spawnSync(redocly, ['lint', file, '--config', path.join(root, 'redocly.yaml'), '--format', 'stylish'], {
    encoding: 'utf8',
    env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
  });
  if (result.error !== undefined) throw result.error;
  process.stdout.write(result.stdout);
  process.stderr.write(result.stderr);
  // Errors fail the lint by themselves; warnings (which a consumer's CI may treat as failures) fail it here too.
  const warnings = /You have (\d+) warnings?/.exec(`${result.stdout}${result.stderr}`);
  if (warnings !== null)
    process.stderr.write(
      `The OpenAPI document has ${warnings[1]} Redocly warning(s): fix them (or, if one is on purpose, turn its rule off in redocly.yaml saying why).\n`,
    );
  process.exitCode = result.status !== 0 ? (result.status ?? 1) : warnings !== null ? 1 : 0;
} finally {
  if (folder !== undefined) rmSync(folder, { recursive: true, force: true });
}
