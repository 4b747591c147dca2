// Graceful shutdown in a fixed order: readiness fails (load balancers stop sending), the server stops
// accepting connections, open requests and event streams drain until a deadline, then the closers run in the
// order given (consumers, then the producer, then pools), then the process exits. A second signal exits at once.
import type { Server } from 'node:http';
import type { Logger } from '@fin/log';
import type { Lifecycle } from './service-app';

export interface Closer {
  /** For the log, e.g. "kafka consumer". */
  name: string;
  close(): Promise<void>;
}

export interface ShutdownOptions {
  logger: Logger;
  lifecycle: Lifecycle;
  /** The HTTP servers to stop; their open requests and streams drain until the deadline. */
  servers: readonly Server[];
  /** How long open requests and streams may take to finish before their connections are closed. */
  drainTimeoutMs: number;
  /**
   * Time between failing readiness and refusing connections, so that load balancers (Kubernetes endpoints)
   * stop routing here before connections are refused. 0 in tests.
   */
  unreadyDelayMs?: number;
  /** Run in order, each after the previous finished; a failing closer is logged and the next still runs. */
  closers: readonly Closer[];
  /** process.exit in main; a recorder in tests. */
  exit: (code: number) => void;
}

/** How often idle keep-alive connections are closed while draining (a finished request leaves one idle). */
const IDLE_SWEEP_MS = 100;

function stopServer(server: Server, deadline: Promise<void>, logger: Logger): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) {
      resolve();
      return;
    }
    const sweep = setInterval(() => server.closeIdleConnections(), IDLE_SWEEP_MS);
    let forced = false;
    server.close(() => {
      clearInterval(sweep);
      // Connections destroyed at the deadline emit 'close' (and their responses' close handlers, which abort
      // upstream work, run) in the close phase of the event loop, after the server's own close event. Two
      // turns of the check phase put the closers after those handlers.
      setImmediate(() => setImmediate(resolve));
    });
    server.closeIdleConnections();
    void deadline.then(() => {
      if (forced) return;
      forced = true;
      server.getConnections((_error, count) => {
        if (count > 0) logger.warn({ connections: count }, 'drain deadline reached: closing the remaining connections');
        server.closeAllConnections();
      });
    });
  });
}

/**
 * Returns `shutdown(signal)`: the first call runs the sequence and then calls `exit` (0, or 1 when a closer
 * failed); a call while it runs (a second signal) calls `exit(1)` at once.
 */
export function createShutdown(options: ShutdownOptions): (signal: string) => Promise<void> {
  const { logger, lifecycle, servers, drainTimeoutMs, unreadyDelayMs = 0, closers, exit } = options;
  let running: Promise<void> | undefined;

  const sequence = async (signal: string) => {
    logger.info({ signal }, 'shutting down: readiness off');
    lifecycle.beginShutdown();
    if (unreadyDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, unreadyDelayMs));

    logger.info({ drainTimeoutMs }, 'refusing new connections; draining open requests and streams');
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, drainTimeoutMs);
    });
    await Promise.all(servers.map((server) => stopServer(server, deadline, logger)));
    clearTimeout(timer);

    let failed = false;
    for (const closer of closers) {
      try {
        await closer.close();
        logger.info({ closer: closer.name }, 'closed');
      } catch (error) {
        failed = true;
        logger.error({ err: error, closer: closer.name }, 'closing failed');
      }
    }
    logger.info({ exitCode: failed ? 1 : 0 }, 'stopped');
    exit(failed ? 1 : 0);
  };

  return (signal: string) => {
    if (running !== undefined) {
      logger.warn({ signal }, 'second signal during shutdown: exiting now');
      exit(1);
      return running;
    }
    running = sequence(signal).catch((error: unknown) => {
      logger.error({ err: error }, 'shutdown failed');
      exit(1);
    });
    return running;
  };
}

/** The part of `process` that delivers signals. */
export interface SignalSource {
  on(signal: NodeJS.Signals, listener: () => void): unknown;
  off(signal: NodeJS.Signals, listener: () => void): unknown;
}

/** Calls `shutdown` on SIGTERM and SIGINT. Returns a function that removes the listeners. */
export function onShutdownSignals(
  shutdown: (signal: string) => Promise<void>,
  source: SignalSource = process,
  signals: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGINT'],
): () => void {
  const listeners = signals.map((signal) => {
    const listener = () => void shutdown(signal);
    source.on(signal, listener);
    return [signal, listener] as const;
  });
  return () => {
    for (const [signal, listener] of listeners) source.off(signal, listener);
  };
}

/**
 * Closes what a start that failed half-way had started, in the order given: every closer runs even when one before
 * it failed, and nothing is thrown, since the start's own error is what the caller reports.
 */
export async function closeStarted(closers: readonly Closer[]): Promise<void> {
  for (const closer of closers) await closer.close().catch(() => undefined);
}
