export {
  ConfigError,
  configRefusal,
  loadConfig,
  parseConfig,
  placeholderSecretProblem,
  redactConfig,
  hideUrlPassword,
  type ConfigIssue,
} from './parse';
export { bool, int, port, secret, url, csv, isSecret, fraction, logConfigShape, crossChecked } from './fields';
