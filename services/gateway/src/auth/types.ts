// The contract between the gateway's HTTP layer (app.ts, routing) and API-key authentication.
import type { ApiScope } from '@fin/contracts';

/** The scopes a key can carry: the contract's, which the document states. */
export { API_SCOPES as SCOPES } from '@fin/contracts';
export type Scope = ApiScope;

/** Who is calling: resolved from a verified API key. */
export interface Principal {
  tenantId: string;
  tenantName: string;
  keyId: string;
  scopes: readonly Scope[];
  /** Per-tenant requests-per-minute overrides arranged with the account manager, by limited product. */
  limitOverrides: Readonly<Partial<Record<string, number>>>;
}

export interface Authenticator {
  /**
   * Resolves an X-API-Key value to its principal. Throws AppError `unauthorized` (401) for a missing,
   * malformed (checked before any database lookup), unknown, revoked or expired key, and `rate_limit_exceeded`
   * (429) when `client` (the caller's address) has failed too often lately and the key is not already verified.
   */
  authenticate(apiKey: string | undefined, client?: string): Promise<Principal>;
  /**
   * Calls `onInvalid` (once) when the principal's key stops being valid while watched: revoked, its tenant
   * disabled, or expired. Returns the function that stops watching. How the event streams of a revoked key end.
   */
  watch(principal: Principal, onInvalid: () => void): () => void;
  close(): Promise<void>;
}
