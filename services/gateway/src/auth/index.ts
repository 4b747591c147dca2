export { createAuthenticator, type PostgresAuthenticator } from './authenticator';
export { requireScope } from './scope';
export { SCOPES, type Authenticator, type Principal, type Scope } from './types';
