// @fin/http: what every HTTP service shares. See docs/gateway.md for how the gateway uses it.
export {
  AppError,
  badGateway,
  badRequest,
  conflict,
  forbidden,
  gatewayTimeout,
  notFound,
  payloadTooLarge,
  serviceUnavailable,
  toAppError,
  tooManyRequests,
  unauthorized,
  unsupportedMediaType,
  type AppErrorOptions,
} from './errors';
export { answerClientErrors } from './client-errors';
export { closeAfterAnswer, type LingerOptions } from './connection';
export { NOT_JSON_DETAIL, errorHandler, formatBytes, notFoundHandler, toHttpError } from './error-handler';
export {
  REQUEST_ID_HEADER,
  REQUEST_ID_PATTERN,
  annotateRequest,
  currentLogger,
  currentRequest,
  isWellFormedRequestId,
  loggerOf,
  requestContext,
  requestIdOf,
  type RequestContext,
  type RequestContextOptions,
} from './request-context';
export { DEFAULT_BODY_LIMIT_BYTES, JSON_TYPES, checkBodyDigest, hasRequestBody, jsonBody, requireJsonContentType } from './body';
export { inMemoryFetch, type InMemoryFetchOptions } from './in-memory-fetch';
export { isPathless, listen, listenOrClose, serveApp, type ListenOrCloseOptions, type Listening } from './listen';
export {
  createHandlerApp,
  cutStream,
  streamEndedEarly,
  serveUnit,
  served,
  tableEntries,
  type HandlerAppOptions,
  type ServeUnitOptions,
} from './handlers';
export type { HandlerTable, RunningService, ServedService, ServiceUnit } from './unit';
export {
  route,
  routeCall,
  routeHandler,
  toExpressPath,
  type RouteCall,
  type RouteContext,
  type RouteHandler,
  type RouteInput,
  type RouteOptions,
} from './route';
export {
  DEFAULT_MAX_REMEMBERED_NONCES,
  DEFAULT_MAX_SKEW_MS,
  GATEWAY_ONLY_DETAIL,
  IDENTITY_HEADERS,
  IDENTITY_HEADER_NAMES,
  callerOf,
  identityKey,
  hasIdentity,
  identityOf,
  signIdentity,
  verifyIdentity,
  vouchFor,
  type Caller,
  type IdentityKey,
  type InternalIdentity,
  type SignedRequest,
  type VerifyIdentityOptions,
} from './identity';
export { UNMATCHED_ROUTE, trackEventStream } from './metrics';
export { nextUtcMidnight, tokenBudgetRefusal, type SpentBudget } from './token-budget';
export {
  DEFAULT_READINESS_TIMEOUT_MS,
  createLifecycle,
  createServiceApp,
  type Lifecycle,
  type ServiceApp,
  type ServiceAppOptions,
} from './service-app';
export {
  runService,
  runSystem,
  serveDefinition,
  type ConfigOf,
  type Launched,
  type RunServiceOptions,
  type ServeDefinitionOptions,
  type ServiceDefinition,
  type SystemMember,
  type SystemShared,
  type UnitDeps,
} from './run-service';
export { closeStarted, createShutdown, onShutdownSignals, type Closer, type ShutdownOptions, type SignalSource } from './shutdown';
