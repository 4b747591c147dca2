export {
  citationsResolved,
  consumerLag,
  dbPoolCheckoutWait,
  eventsHandled,
  httpRequestDuration,
  httpRequests,
  jobDuration,
  jobsFinished,
  jobsInFlight,
  jobSubmissions,
  mcpToolCalls,
  meterPool,
  modelBudgetWaitSeconds,
  modelBudgetWaiting,
  modelRequests,
  modelTokens,
  outboxOldestUnpublishedAge,
  outboxRelayLeader,
  outboxUnpublishedRows,
  reaperActions,
  registry,
  sseStreamsOpen,
  webhookAttempts,
  type PoolStats,
} from './catalog';
export { refreshEvery, type Refresher } from './refresh';
export { clearNotLive, livenessProblems, notLive, reportNotLive } from './liveness';
export { metricsConfigShape, startMetricsServer, type MetricsServer } from './server';
