export {
  consumerLag,
  eventsHandled,
  httpRequestDuration,
  httpRequests,
  jobDuration,
  jobsFinished,
  jobSubmissions,
  modelRequests,
  modelTokens,
  registry,
  sseStreamsOpen,
} from './catalog';
export { clearNotLive, livenessProblems, notLive, reportNotLive } from './liveness';
export { metricsConfigShape, startMetricsServer, type MetricsServer } from './server';
