import pino, { type Logger, type LoggerOptions } from 'pino';
import { traceLogFields } from './trace';

export type { Logger };
export { TRACEPARENT_HEADER, childSpan, currentTrace, formatTraceparent, parseTraceparent, runInSpan, traceHeaders, type TraceContext } from './trace';

/**
 * Paths whose values never reach a log line: API keys, authorization headers, customer-tool header
 * secrets, passwords and tokens, wherever they appear in a logged object.
 */
export const REDACTED_PATHS = [
  ...['apiKey', 'api_key', 'password', 'secret', 'token', 'authorization'].flatMap((key) => [key, `*.${key}`]),
  // Request headers that carry credentials, wherever a request is logged.
  ...['x-api-key', 'authorization', 'cookie', 'proxy-authorization', 'x-fin-signature'].flatMap((header) => [
    `headers["${header}"]`,
    `*.headers["${header}"]`,
  ]),
  // A customer tool's headers are all secrets.
  'tool.headers',
  'config.ANTHROPIC_API_KEY',
];

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
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    mixin: traceLogFields,
  };
  return destination ? pino(options, destination) : pino(options);
}
