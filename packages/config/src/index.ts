export { ConfigError, loadConfig, parseConfig, placeholderSecretProblem, redactConfig, type ConfigIssue } from './parse';
export { bool, int, port, secret, url, csv, isSecret, logLevel } from './fields';
