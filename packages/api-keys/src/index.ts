// @fin/api-keys: the API key format. The gateway verifies keys and its admin CLI issues them; the portal issues
// the keys customers generate themselves. One implementation, so a key made in either place works in the other.
export { API_KEY_LENGTH, API_KEY_PREFIX, displayPrefixOf, generateApiKey, hashApiKey, isWellFormedApiKey, type GeneratedApiKey } from './api-key';
