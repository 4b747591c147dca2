export {
  citationsResolved,
  figureChecks,
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
} from './catalog';
export { refreshEvery } from './refresh';
export { clearNotLive, livenessProblems, notLive, reportNotLive } from './liveness';
export { metricsConfigShape, startMetricsServer, type MetricsServer } from './server';
