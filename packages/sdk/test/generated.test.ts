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

// docs/api-decisions.md (Generating a client): with openapi-typescript's default options a field that has a
// default (news `n`, `language`) becomes required in the request types, so a client must send what the API would
// fill in. `defaultNonNullable: false` (`--default-non-nullable false` on the command line) keeps it optional.
it('openapi-typescript keeps fields with defaults optional in requests only with defaultNonNullable false, as the docs say', async () => {
  const run = spawnSync(
    process.execPath,
    [
      '--conditions=development',
      '--import',
      'tsx',
      '--input-type=module',
      '-e',
      `import contracts from '@fin/contracts';
       import openapiTS, { astToString } from 'openapi-typescript';
       const document = JSON.parse(JSON.stringify(contracts.createOpenApiDocument()));
       const news = async (options) => {
         const text = astToString(await openapiTS(structuredClone(document), options));
         return /NewsRequest: \\{([\\s\\S]*?)\\n {8}\\};/.exec(text)[1];
       };
       console.log(JSON.stringify({ defaults: await news({}), documented: await news({ defaultNonNullable: false }) }));`,
    ],
    { cwd: path.join(__dirname, '..'), encoding: 'utf8' },
  );
  expect(run.stderr).toBe('');
  const { defaults, documented } = JSON.parse(run.stdout) as { defaults: string; documented: string };
  expect(defaults).toMatch(/\bn: number;/);
  expect(documented).toMatch(/\bn\?: number;/);
  expect(documented).toMatch(/\blanguage\?: /);
  expect(documented).toMatch(/\bsymbols: /);
});
