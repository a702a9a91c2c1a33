import type { NextFunction, Request, Response } from 'express';
import { AppError, errorBody, toAppError, type Logger } from '@secsvc/shared';

/** body-parser errors carry a `type`; map them to the API's codes. */
function fromBodyParser(err: { type?: string; status?: number }): AppError | undefined {
  if (typeof err?.type !== 'string') return undefined;
  switch (err.type) {
    case 'entity.parse.failed':
      return AppError.invalid([{ field: '(body)', message: 'malformed JSON' }], 'Request body is not valid JSON');
    case 'encoding.invalid_utf8':
      return AppError.invalid([{ field: '(body)', message: 'must be UTF-8 (RFC 8259)' }], 'Request body is not UTF-8');
    case 'entity.too.large':
      return new AppError('payload_too_large', 'Request body is larger than 1 MiB');
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return new AppError('unsupported_media_type', 'Unsupported body encoding or charset');
    case 'parameters.too.many':
      return AppError.invalid([{ field: '(body)', message: 'has more parameters than this endpoint reads' }], 'The form has too many parameters');
    case 'request.aborted':
    case 'request.size.invalid':
    case 'stream.encoding.set':
      return AppError.invalid([], 'Request body could not be read');
    default:
      // Any other client fault body-parser reports (it marks them expose, 4xx) is still the client's.
      return err.status !== undefined && err.status >= 400 && err.status < 500 ? AppError.invalid([{ field: '(body)', message: 'could not be parsed' }], 'Request body was refused') : undefined;
  }
}

/** Retry-After of a 503 whose cause gave none. */
export const UNAVAILABLE_RETRY_SECONDS = 2;

/** The one place errors become HTTP responses; a 500 never carries internal text. */
export function errorHandler(logger: Logger) {
  return (err: unknown, req: Request, res: Response, _next: NextFunction): void => {
    const appErr = fromBodyParser(err as { type?: string; status?: number }) ?? toAppError(err);
    if (appErr.code === 'internal_error') {
      logger.error({ err: { message: (err as Error)?.message, stack: (err as Error)?.stack }, requestId: req.requestId }, 'unhandled error');
    }
    if (res.headersSent) return void res.end();
    if (appErr.code === 'unauthorized') res.setHeader('WWW-Authenticate', 'Bearer realm="secsvc"');
    if (appErr.retryAfterSeconds !== undefined) res.setHeader('Retry-After', String(Math.ceil(appErr.retryAfterSeconds)));
    // A service down (restarting under the launcher's supervision, or a rollout): worth retrying shortly.
    else if (appErr.code === 'unavailable') res.setHeader('Retry-After', String(UNAVAILABLE_RETRY_SECONDS));
    res.status(appErr.httpStatus).json(errorBody(appErr, req.requestId));
  };
}

export function notFound(req: Request, _res: Response, next: NextFunction): void {
  next(new AppError('not_found', `No route for ${req.method} ${req.path}`));
}
