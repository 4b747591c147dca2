import pino, { type Logger, type LoggerOptions } from 'pino';
import { errorSerializer, redactFields } from './redact';
import { traceLogFields } from './trace';

export type { Logger };
export { REDACTED_PATHS } from './redact';
export { TRACEPARENT_HEADER, childSpan, currentTrace, formatTraceparent, parseTraceparent, runInSpan, traceHeaders, type TraceContext } from './trace';

export interface LogOptions {
  service: string;
  level?: LoggerOptions['level'];
  /** Where lines go; defaults to the process's shared stdout writer. Tests pass a stream to read what was logged. */
  destination?: pino.DestinationStream;
}

let stdout: pino.DestinationStream | undefined;

/**
 * The one stdout writer of the process, shared by every logger in it (the standalone process has one logger per
 * service). It writes asynchronously: a line goes out at once when no write is in flight, and the lines that
 * arrive meanwhile go out together in the next write. Under load that is one system call for many lines instead
 * of one per line, on the thread that serves requests. Shared, so that two loggers' batches never interleave
 * inside a line. What is still buffered is written synchronously when the process exits (process.exit, the end
 * of the event loop, a fatal error that exits); a SIGKILL can lose the lines of the last write in flight.
 */
export function standardOutput(): pino.DestinationStream {
  return (stdout ??= pino.destination({ dest: 1, sync: false }));
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
  const logger = pino(options, destination ?? standardOutput());
  // pino formats a child's bindings without the `bindings` formatter; children inherit this method.
  const child = Object.getPrototypeOf(logger) as Pick<Logger, 'child'>;
  logger.child = function redactedChild(this: Logger, bindings, childOptions) {
    return child.child.call(this, redactFields(bindings), childOptions);
  } as Logger['child'];
  return logger;
}
