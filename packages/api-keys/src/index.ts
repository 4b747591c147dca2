// @fin/api-keys: the key store. The key format (generation, checksum, hashing); tenants and their limit
// overrides; creating, listing and revoking keys (Prisma); and the look-ups that authenticate a key (pg). The
// admin CLI, the portal and the gateway all go through it, so there is one create path, one revoke path and one
// definition of a key that works.
export { API_KEY_LENGTH, API_KEY_PREFIX, displayPrefixOf, generateApiKey, hashApiKey, isWellFormedApiKey } from './api-key';
export { KeyStoreError } from './errors';
export { createKey, listKeys, MAX_ACTIVE_KEYS_PER_TENANT, parseScopes, revokeKey, type KeyInfo } from './keys';
export {
  DAILY_TOKEN_BUDGET_LIMIT,
  DEFAULT_CHAT_CONCURRENCY,
  DEFAULT_LIMITS,
  accountCounterKey,
  accountLimit,
  type LimitedProduct,
} from './limits';
export { findActiveKey, findActiveKeyById, recordKeysUsed, stillActiveKeyIds, type ActiveKey } from './lookup';
export {
  clearLimitOverrides,
  createTenant,
  disableTenant,
  enableTenant,
  listTenants,
  setLimitOverride,
  showLimits,
  type TenantInfo,
} from './tenants';
