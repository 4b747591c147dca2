// @fin/api-keys: the key store. The key format (generation, checksum, hashing); tenants and their limit
// overrides; creating, listing and revoking keys (Prisma); and the look-ups that authenticate a key (pg). The
// admin CLI, the portal and the gateway all go through it, so there is one create path, one revoke path and one
// definition of a key that works.
export {
  API_KEY_LENGTH,
  API_KEY_PREFIX,
  displayPrefixOf,
  generateApiKey,
  hashApiKey,
  isWellFormedApiKey,
  type GeneratedApiKey,
} from './api-key';
export { KeyStoreError, type KeyStoreRefusal } from './errors';
export {
  createKey,
  listKeys,
  MAX_ACTIVE_KEYS_PER_TENANT,
  parseScopes,
  revokeKey,
  type CreatedKey,
  type CreateKeyInput,
  type KeyInfo,
  type KeyStatus,
} from './keys';
export {
  DAILY_TOKEN_BUDGET_LIMIT,
  DEFAULT_CHAT_CONCURRENCY,
  DEFAULT_LIMITS,
  LIMITED_PRODUCTS,
  accountCounterKey,
  accountLimit,
  OVERRIDABLE_LIMITS,
  parseLimitOverrides,
  type LimitedProduct,
  type OverridableLimit,
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
  type LimitsReport,
  type TenantInfo,
  type TenantRef,
} from './tenants';
