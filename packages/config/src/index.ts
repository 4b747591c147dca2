export { ConfigError, configRefusal, loadConfig, parseConfig, placeholderSecretProblem, redactConfig, hideUrlPassword, type ConfigIssue } from './parse';
export { bool, int, port, secret, url, csv, isSecret, logLevel, fraction, logConfigShape, crossChecked, type CrossCheck } from './fields';
