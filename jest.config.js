// Root entry: `jest` here runs every package's and service's suite (each with its own config).
module.exports = {
  projects: ['<rootDir>/packages/*/jest.config.js', '<rootDir>/services/*/jest.config.js'],
};
