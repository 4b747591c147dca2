// The committed types (src/generated/openapi.ts) must be what the contracts give now: a route or field added to
// the contracts without `pnpm --filter @financial-intelligence/sdk generate` fails here.
import { spawnSync } from 'node:child_process';
import path from 'node:path';

it('src/generated/openapi.ts is up to date with the OpenAPI document of the contracts', () => {
  const run = spawnSync(process.execPath, ['--conditions=development', '--import', 'tsx', 'scripts/generate.mjs', '--check'], {
    cwd: path.join(__dirname, '..'),
    encoding: 'utf8',
  });
  expect({ status: run.status, stderr: run.stderr }).toEqual({ status: 0, stderr: '' });
});
