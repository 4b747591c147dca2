// Root entry: `jest` here runs every package's and service's suite (each with its own config).
module.exports = {
  // Global options are not read from projects: the timeout is set here for runs from the root.
  testTimeout: 60_000,
  projects: [
    '<rootDir>/packages/*/jest.config.js',
    '<rootDir>/services/*/jest.config.js',
    '<rootDir>/e2e/jest.config.js',
    '<rootDir>/infra/jest.config.js',
  ],
};
