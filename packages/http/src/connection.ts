// How a connection ends after an answer given before the request's body was read (a refusal, a probe).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

export interface LingerOptions {
  /** How long the rest of the body is read before the connection is closed anyway (2 s). */
  lingerMs?: number;
  /** How much of it is read (and discarded) at most before the connection is closed anyway (256 KiB). */
  lingerBytes?: number;
}

const DEFAULT_LINGER_MS = 2_000;
const DEFAULT_LINGER_BYTES = 256 * 1024;

/**
 * Makes `res` the connection's last answer (`Connection: close`, effective until its head is written) and, when the
 * request's body has not been read in full, closes the connection in stages, as RFC 9112 §9.6 (Tear-down) asks of
 * a server: half-close (our FIN after the answer), then go on reading and discarding what the client still sends,
 * for up to `lingerMs` and `lingerBytes`, before closing. Closing at once with the client's bytes unread makes the
 * kernel answer them with a reset, which can destroy the answer before the client reads it: a client that sent a
 * 200 KB body with a GET saw ECONNRESET instead of the document. Node closes a last connection with
 * `socket.destroySoon()` once the answer is finished; the socket's own replaces it.
 */
export function closeAfterAnswer(req: IncomingMessage, res: ServerResponse, options: LingerOptions = {}): void {
  res.shouldKeepAlive = false;
  if (req.complete) return;
  const { lingerMs = DEFAULT_LINGER_MS, lingerBytes = DEFAULT_LINGER_BYTES } = options;
  const socket: Socket = req.socket;
  socket.destroySoon = () => {
    socket.end();
    if (req.complete) return;
    let read = 0;
    const close = () => {
      clearTimeout(timer);
      socket.off('data', count);
      socket.destroy();
    };
    const count = (chunk: Buffer) => {
      read += chunk.length;
      if (read > lingerBytes) close();
    };
    const timer = setTimeout(close, lingerMs);
    timer.unref();
    socket.on('data', count);
    socket.once('close', () => {
      clearTimeout(timer);
    });
  };
}
