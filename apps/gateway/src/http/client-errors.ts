import { maxHeaderSize, STATUS_CODES, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { AppError, errorBody, errorCodes, newId, type Logger } from '@secsvc/shared';

/**
 * What Node's HTTP parser refused before any route saw the request: the error of the API's shape for it. Node's
 * own answers are a bare status line and no body; the codes it picks stay (400, 408, 431).
 */
export function clientErrorAnswer(code: string | undefined): AppError {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return new AppError('request_header_fields_too_large', `The request line and headers are larger than ${maxHeaderSize / 1024} KiB (a query string that long included)`);
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new AppError('request_timeout', 'The request did not arrive in full in time');
    default:
      return new AppError('invalid_request', 'The request is not well-formed HTTP/1.1');
  }
}

/**
 * Answers requests the HTTP parser refused (a request line and headers over the limit, malformed HTTP, a request
 * not received in time) in the error shape with an X-Request-Id, then closes the connection, as Node does.
 * A socket that can no longer be written to (reset by the client, or a response already under way) is only
 * destroyed.
 */
export function answerClientErrors(server: Server, logger: Logger): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex & { _httpMessage?: { headersSent?: boolean } }) => {
    if (err.code === 'ECONNRESET' || !socket.writable || socket._httpMessage?.headersSent) {
      socket.destroy();
      return;
    }
    const error = clientErrorAnswer(err.code);
    const status = errorCodes[error.code].http;
    const requestId = newId('req');
    const body = JSON.stringify(errorBody(error, requestId));
    logger.info({ requestId, status, reason: err.code }, 'request refused by the HTTP parser');
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `X-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
}
