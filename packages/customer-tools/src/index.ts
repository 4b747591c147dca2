// @fin/customer-tools: everything about the external APIs customers register for the model: storage (tenant-
// scoped, header secrets sealed with AES-256-GCM), JSON Schema checks, the SSRF-safe executor, the call audit,
// and the runtime that hands a tenant's tools to the AI engine. See docs/customer-tools.md.
export { bareAddress, isAllowedAddress, isLoopbackHost, type AddressPolicy } from './address';
export { listCalls, type CallRecord } from './audit';
export { createCustomerToolsFromConfig, customerToolsConfigShape, keyringFromConfig, webhookTargetPolicy } from './config';
export { createToolExecutor, type CallResult, type ToolExecutor, type ToolRequest } from './executor';
export { compileInputSchema, inputSchemaProblems } from './input-schema';
export { createCustomerToolRuntime, type CustomerToolRuntime } from './runtime';
export { SecretsError, createKeyring, parseEncryptionKey, type EncryptionKey, type Keyring, type SealContext } from './secrets';
export {
  CustomerToolError,
  DEFAULT_MAX_TOOLS_PER_TENANT,
  createToolStore,
  reencryptToolSecrets,
  toApiTool,
  type StoredTool,
  type ToolStore,
} from './store';
