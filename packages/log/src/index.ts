import pino, { type Logger, type LoggerOptions } from 'pino';
import { errorSerializer, redactFields } from './redact';
import { traceLogFields } from './trace';

export type { Logger };
export { REDACTED_PATHS } from './redact';
export {
  LazySpanScope,
  TRACEPARENT_HEADER,
  childSpan,
  currentScope,
  currentTrace,
  formatTraceparent,
  parseTraceparent,
  runInScope,
  runInSpan,
  traceHeaders,
  type TraceContext,
} from './trace';

/**
 * Which successful requests get their access-log line (@fin/http requestContext). A request that failed (status
 * 400 or more), was aborted by its client or took `slowMs` or longer is always logged, whatever the rate.
 */
export interface AccessLogPolicy {
  /** The share of the other requests logged, 0 to 1 (ACCESS_LOG_SAMPLE_RATE). 1: every request. */
  sampleRate: number;
  /** A request that takes this long or longer is always logged (ACCESS_LOG_SLOW_MS). */
  slowMs: number;
}

const DEFAULT_ACCESS_LOG_POLICY: AccessLogPolicy = Object.freeze({ sampleRate: 1, slowMs: 1_000 });

export interface LogOptions {
  service: string;
  level?: LoggerOptions['level'];
  /** Which requests an HTTP service writes an access-log line for; default: every request. */
  accessLog?: Partial<AccessLogPolicy>;
  /** Where lines go; defaults to the process's shared stdout writer. Tests pass a stream to read what was logged. */
  destination?: pino.DestinationStream;
}

/** The logging settings of a service's configuration (logConfigShape in @fin/config). */
export interface LogSettings {
  LOG_LEVEL: string;
  ACCESS_LOG_SAMPLE_RATE: number;
  ACCESS_LOG_SLOW_MS: number;
}

/** createLogger's options from a service's settings: `createLogger({ service: 'news', ...logOptionsOf(config) })`. */
export function logOptionsOf(settings: LogSettings): Pick<LogOptions, 'level' | 'accessLog'> {
  return { level: settings.LOG_LEVEL, accessLog: { sampleRate: settings.ACCESS_LOG_SAMPLE_RATE, slowMs: settings.ACCESS_LOG_SLOW_MS } };
}

/** Lines are written once this many bytes are waiting (or at the latest STDOUT_FLUSH_MS after the first). */
const STDOUT_BUFFER_BYTES = 16 * 1024;
/** The longest a line waits in the buffer in a quiet process. */
const STDOUT_FLUSH_MS = 250;

let stdout: pino.DestinationStream | undefined;

/**
 * The one stdout writer of the process, shared by every logger in it (the standalone process has one logger per
 * service), so that two loggers' lines never interleave inside a line. Lines are buffered and written together
 * once STDOUT_BUFFER_BYTES are waiting, off the thread that serves requests (each write is a system call, which on
 * a busy machine costs more than formatting the line), and at the latest STDOUT_FLUSH_MS after they were logged.
 * Nothing is lost on the ways a process ends by itself: a fatal line is written synchronously with everything
 * before it (pino flushes on fatal), and what is still buffered is written synchronously on process.exit, at the
 * end of the event loop and on an uncaught exception. Only a SIGKILL (or a crash of Node itself) can lose the
 * last STDOUT_FLUSH_MS of lines.
 */
function standardOutput(): pino.DestinationStream {
  if (stdout !== undefined) return stdout;
  // Buffer mode: sonic-boom keeps the waiting lines as a list of buffers and their byte count as a number. In its
  // utf8 mode it appends each line to one string and measures that string's UTF-8 length on every write, which
  // copies the whole waiting buffer (up to STDOUT_BUFFER_BYTES) per line: garbage that grows with the buffer, not
  // with the line, on every request. pino writes strings, so each line becomes a buffer here (a slice of Node's
  // shared pool, off the heap).
  const destination = pino.destination({
    dest: 1,
    sync: false,
    contentMode: 'buffer',
    minLength: STDOUT_BUFFER_BYTES,
    maxWrite: 4 * STDOUT_BUFFER_BYTES,
    periodicFlush: STDOUT_FLUSH_MS,
  });
  // sonic-boom types `write` for its utf8 mode; in buffer mode it takes buffers.
  const writeBuffer = destination.write.bind(destination) as unknown as (line: Buffer) => boolean;
  destination.write = (line: string) => writeBuffer(Buffer.from(line));
  return (stdout = destination);
}

let timeMs = -1;
let timeField = '';

/** pino's isoTime, formatted once per millisecond (a busy service writes several lines in the same one). */
function isoTime(): string {
  const now = Date.now();
  if (now !== timeMs) {
    timeMs = now;
    timeField = `,"time":"${new Date(now).toISOString()}"`;
  }
  return timeField;
}

const ACCESS_LOG_POLICY = Symbol('finAccessLogPolicy');

/** The access-log policy the logger was created with; child loggers share their parent's. */
export function accessLogPolicyOf(logger: Logger): AccessLogPolicy {
  return (logger as Logger & { [ACCESS_LOG_POLICY]?: AccessLogPolicy })[ACCESS_LOG_POLICY] ?? DEFAULT_ACCESS_LOG_POLICY;
}

function checkedPolicy({
  sampleRate = DEFAULT_ACCESS_LOG_POLICY.sampleRate,
  slowMs = DEFAULT_ACCESS_LOG_POLICY.slowMs,
}: Partial<AccessLogPolicy>): AccessLogPolicy {
  if (!(sampleRate >= 0 && sampleRate <= 1)) throw new RangeError(`the access-log sample rate must be between 0 and 1, got ${sampleRate}`);
  if (!(slowMs >= 0)) throw new RangeError(`the access-log slow threshold must be 0 ms or more, got ${slowMs}`);
  return Object.freeze({ sampleRate, slowMs });
}

/**
 * One JSON line per event, with the service name on every line, the trace and span ids on every line written
 * inside a span (see trace.ts), and secrets redacted.
 */
export function createLogger({ service, level = 'info', accessLog = {}, destination }: LogOptions): Logger {
  const options: LoggerOptions = {
    level,
    base: { service },
    // Secrets (REDACTED_PATHS) are replaced in every logged object and error (and child bindings, below).
    formatters: { level: (label) => ({ level: label }), log: redactFields },
    serializers: { err: errorSerializer },
    timestamp: isoTime,
    mixin: traceLogFields,
  };
  const logger = pino(options, destination ?? standardOutput());
  // Read through the prototype chain: pino's children are made with Object.create(parent).
  Object.defineProperty(logger, ACCESS_LOG_POLICY, { value: checkedPolicy(accessLog) });
  // pino formats a child's bindings without the `bindings` formatter; children inherit this method.
  const child = Object.getPrototypeOf(logger) as Pick<Logger, 'child'>;
  logger.child = function redactedChild(this: Logger, bindings, childOptions) {
    return child.child.call(this, redactFields(bindings), childOptions);
  } as Logger['child'];
  return logger;
}
