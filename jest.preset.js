// Shared Jest settings: every package's jest.config.js is `require('../../jest.preset.js')(__dirname)`.
// TypeScript is transformed by SWC (type-checking is `tsc`'s job); workspace packages resolve to their
// sources through the "development" export condition; each test file runs in an environment that fails
// it when it leaves a server, socket, pool or consumer open (packages/testing/src/leak-environment.ts).
const path = require('node:path');

module.exports = (dir) => ({
  displayName: path.basename(dir),
  rootDir: dir,
  testMatch: ['<rootDir>/test/**/*.test.ts'],
  testEnvironment: path.join(__dirname, 'packages/testing/src/leak-environment.ts'),
  testEnvironmentOptions: { customExportConditions: ['development', 'node', 'require', 'default'] },
  transform: {
    '^.+\\.ts$': ['@swc/jest', { jsc: { parser: { syntax: 'typescript' }, target: 'es2024' }, module: { type: 'commonjs' } }],
  },
  moduleFileExtensions: ['ts', 'js', 'json'],
  testTimeout: 60_000,
});
