export { ConfigError, loadConfig, parseConfig, redactConfig, type ConfigIssue } from './parse';
export { bool, int, port, secret, url, csv, isSecret, logLevel } from './fields';
