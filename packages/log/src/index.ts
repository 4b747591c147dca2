import pino, { type Logger, type LoggerOptions } from 'pino';
import { errorSerializer, redactFields } from './redact';
import { traceLogFields } from './trace';

export type { Logger };
export { REDACTED_PATHS } from './redact';
export { TRACEPARENT_HEADER, childSpan, currentTrace, formatTraceparent, parseTraceparent, runInSpan, traceHeaders, type TraceContext } from './trace';

export interface LogOptions {
  service: string;
  level?: LoggerOptions['level'];
  /** Where lines go; defaults to stdout. Tests pass a stream to read what was logged. */
  destination?: pino.DestinationStream;
}

/**
 * One JSON line per event, with the service name on every line, the trace and span ids on every line written
 * inside a span (see trace.ts), and secrets redacted.
 */
export function createLogger({ service, level = 'info', destination }: LogOptions): Logger {
  const options: LoggerOptions = {
    level,
    base: { service },
    // Secrets (REDACTED_PATHS) are replaced in every logged object and error (and child bindings, below).
    formatters: { level: (label) => ({ level: label }), log: redactFields },
    serializers: { err: errorSerializer },
    timestamp: pino.stdTimeFunctions.isoTime,
    mixin: traceLogFields,
  };
  const logger = destination ? pino(options, destination) : pino(options);
  // pino formats a child's bindings without the `bindings` formatter; children inherit this method.
  const child = Object.getPrototypeOf(logger) as Pick<Logger, 'child'>;
  logger.child = function redactedChild(this: Logger, bindings, childOptions) {
    return child.child.call(this, redactFields(bindings), childOptions);
  } as Logger['child'];
  return logger;
}
