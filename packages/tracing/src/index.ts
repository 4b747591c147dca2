export { tracingConfigShape } from './config';
export { startTracing } from './sdk';
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
