import { forbidden } from '@fin/http';
import type { Principal, Scope } from './types';

/** Throws 403 `forbidden` unless the principal's key carries `scope`. */
export function requireScope(principal: Principal, scope: Scope): void {
  if (!principal.scopes.includes(scope)) throw forbidden(`This API key does not have the ${scope} scope.`);
}
