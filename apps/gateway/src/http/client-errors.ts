import { maxHeaderSize, STATUS_CODES, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { AppError, errorBody, errorCodes, newId, type Logger } from '@secsvc/shared';

/** How long a request may take to arrive in full (the HTTP server's requestTimeout), then 408. */
export const REQUEST_TIMEOUT_MS = 30_000;
/** The most a request line and its headers may take (Node's --max-http-header-size), then 431. */
export const MAX_HEADER_KIB = maxHeaderSize / 1024;

/**
 * What Node's HTTP parser refused before any route saw the request: the error of the API's shape for it. Node's
 * own answers are a bare status line and no body; the statuses it picks stay (400, 408, 431).
 */
export function clientErrorAnswer(code: string | undefined): AppError {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return new AppError('request_header_fields_too_large', `The request line and headers are larger than ${MAX_HEADER_KIB} KiB (a query string that long included)`);
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new AppError('request_timeout', 'The request did not arrive in full in time');
    default:
      return new AppError('invalid_request', 'The request is not well-formed HTTP/1.1');
  }
}

/**
 * Answers requests the HTTP parser refused (a request line and headers over the limit, malformed HTTP, a request
 * not received in time) in the error shape with a new X-Request-Id (the request's own was never read), then
 * closes the connection, as Node does. Only when nothing else is answering on the socket: with a response under
 * way (an earlier request of the connection, pipelined, still being served; or the request whose body failed to
 * parse, which its handler is serving), or a socket already reset, the connection is only destroyed, so no
 * request gets another's answer and none gets two.
 */
export function answerClientErrors(server: Server, logger: Logger): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex & { _httpMessage?: unknown }) => {
    if (err.code === 'ECONNRESET' || !socket.writable || socket._httpMessage) {
      socket.destroy();
      return;
    }
    const error = clientErrorAnswer(err.code);
    const status = errorCodes[error.code].http;
    const requestId = newId('req');
    const body = JSON.stringify(errorBody(error, requestId));
    logger.debug({ requestId, status, reason: err.code }, 'request refused by the HTTP parser');
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `X-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n${body}`,
      // The server allows half-open connections: without this a client that never closes would keep the socket.
      () => socket.destroy(),
    );
  });
}
