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
export { metricsConfigShape, startMetricsServer, type MetricsServer } from './server';
