export { tracingConfigShape, type TracingConfig } from './config';
export { startTracing, type Tracing } from './sdk';
export {
  FIN_ATTRIBUTES,
  SpanKind,
  endSpan,
  setSpanAttributes,
  startSpan,
  tracingEnabled,
  useTracer,
  withRemoteSpan,
  withSpan,
  type Attributes,
  type LiveSpan,
  type Span,
} from './spans';
