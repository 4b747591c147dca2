// Requests Node's HTTP parser refuses before express sees them (an oversized header block, a control character in
// a header, contradictory framing, a malformed request line). Node answers those with a bare 400 or 431 and no
// body; this answers them with the spec's error body like every other rejection, then closes the connection.
import type { Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { ERROR_STATUS } from '@fin/contracts';
import type { Logger } from '@fin/log';

/** What the parser's error code says went wrong, in the words of the error body's detail. */
function detailFor(code: string | undefined): string {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return 'The request line and headers are too large.';
    case 'ERR_HTTP_REQUEST_TIMEOUT':
    case 'ERR_HTTP_HEADERS_TIMEOUT':
      return 'The request was not received in time.';
    default:
      return 'The request is not valid HTTP.';
  }
}

/**
 * Answers the parser's refusals on `server` with 400 `validation_error` in the error body. 400 rather than Node's
 * 431 or 408: the error types are a closed set and 400 is the one for a request the client must fix (the same
 * rule by which the gateway turns a service's other 4xx statuses into 400).
 */
export function answerClientErrors(server: Server, logger: Logger): void {
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    // A reset is the client leaving, and a response already under way cannot be replaced: just close.
    const started = (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent === true;
    if (error.code === 'ECONNRESET' || !socket.writable || started) {
      socket.destroy();
      return;
    }
    const detail = detailFor(error.code);
    logger.warn({ code: error.code, detail }, 'request refused by the HTTP parser');
    const status = ERROR_STATUS.validation_error;
    const body = JSON.stringify({ detail, status_code: status, type: 'validation_error' });
    socket.end(
      `HTTP/1.1 ${status} Bad Request\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
}
