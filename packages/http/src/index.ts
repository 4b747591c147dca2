// @fin/http: what every HTTP service shares. See docs/gateway.md for how the gateway uses it.
export {
  AppError,
  badGateway,
  badRequest,
  conflict,
  forbidden,
  gatewayTimeout,
  notFound,
  serviceUnavailable,
  toAppError,
  tooManyRequests,
  unauthorized,
} from './errors';
export { answerClientErrors } from './client-errors';
export { closeAfterAnswer, type LingerOptions } from './connection';
export { NOT_JSON_DETAIL, errorHandler, notFoundHandler } from './error-handler';
export {
  REQUEST_ID_HEADER,
  annotateRequest,
  currentLogger,
  currentRequest,
  isWellFormedRequestId,
  loggerOf,
  requestContext,
  requestIdOf,
} from './request-context';
export { JSON_TYPES, checkBodyDigest, hasRequestBody, jsonBody, requireJsonContentType } from './body';
export { inMemoryFetch } from './in-memory-fetch';
export { listen, listenOrClose } from './listen';
export { createHandlerApp, cutStream, streamEndedEarly, serveUnit, served } from './handlers';
export type { HandlerTable, RunningService, ServedService, ServiceUnit } from './unit';
export {
  route,
  routeCall,
  toExpressPath,
  type RouteCall,
  type RouteContext,
  type RouteHandler,
  type RouteInput,
  type RouteOptions,
} from './route';
export {
  GATEWAY_ONLY_DETAIL,
  IDENTITY_HEADERS,
  IDENTITY_HEADER_NAMES,
  identityKey,
  hasIdentity,
  identityOf,
  signIdentity,
  verifyIdentity,
  vouchFor,
  type Caller,
  type IdentityKey,
  type InternalIdentity,
} from './identity';
export { trackEventStream } from './metrics';
export { nextUtcMidnight, tokenBudgetRefusal, type SpentBudget } from './token-budget';
export { createLifecycle, createServiceApp, type Lifecycle, type ServiceApp } from './service-app';
export {
  runService,
  runSystem,
  serveDefinition,
  type ConfigOf,
  type Launched,
  type ServiceDefinition,
  type SystemMember,
  type SystemShared,
  type UnitDeps,
} from './run-service';
export { createShutdown, onShutdownSignals, type Closer } from './shutdown';
export { createResources } from './resources';
