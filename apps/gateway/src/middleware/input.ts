import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { AppError, inputFaults, isValidUtf8, type FieldError } from '@secsvc/shared';

// The gateway's one guard against input that no service behind it can store or walk safely: every request's
// path and query, and every parsed body (JSON or form), before any handler sees them. See INPUT_LIMITS in
// libs/shared/src/input.ts for the rules; the gRPC servers apply the same rules to each message.

const refuse = (faults: FieldError[]) => AppError.invalid(faults, 'The request contains input that cannot be accepted');

/** Raw body bytes must be UTF-8 (RFC 8259 8.1); body-parser reports the throw as entity.verify.failed. */
function verifyUtf8(_req: Request, _res: Response, buf: Buffer): void {
  if (!isValidUtf8(buf)) throw Object.assign(new Error('body is not UTF-8'), { type: 'encoding.invalid_utf8', status: 400 });
}

function checkBody(req: Request, _res: Response, next: NextFunction): void {
  const faults = req.body === undefined ? [] : inputFaults(req.body);
  next(faults.length ? refuse(faults) : undefined);
}

/** A JSON body parser (application/json, at most `limit`) followed by the guard. */
export function jsonBody(limit: string): RequestHandler[] {
  return [express.json({ limit, strict: true, type: 'application/json', verify: verifyUtf8 }), checkBody];
}

/** Forms whose raw bytes hold a NUL (encoded as %00 or not). */
const formsWithNul = new WeakSet<Request>();

/**
 * A form's raw bytes must be UTF-8; a NUL in them is noted, because the parser drops some pairs (an empty name)
 * before the guard could see their values.
 */
function verifyForm(req: Request, res: Response, buf: Buffer): void {
  verifyUtf8(req, res, buf);
  if (buf.includes(0) || buf.includes('%00')) formsWithNul.add(req);
}

/** The guard over a parsed form: its fields by name, then a NUL only the raw bytes showed. */
function checkForm(req: Request, res: Response, next: NextFunction): void {
  checkBody(req, res, (err?: unknown) => {
    if (err || !formsWithNul.has(req)) return next(err);
    next(refuse([{ field: '(body)', message: 'must not contain the NUL character (U+0000)' }]));
  });
}

/** An application/x-www-form-urlencoded body parser followed by the guard. */
export function formBody(limit: string, parameterLimit: number): RequestHandler[] {
  return [express.urlencoded({ extended: false, limit, parameterLimit, verify: verifyForm }), checkForm];
}

/** Whether the percent-escapes of a query decode to UTF-8 (a stray % is left as it is, as the query parser does). */
function decodesAsUtf8(raw: string): boolean {
  try {
    decodeURIComponent(raw.replace(/%(?![0-9a-fA-F]{2})/g, '%25'));
    return true;
  } catch {
    return false;
  }
}

/** The path and query of every request: percent-decoded, they must be UTF-8 without NUL characters. */
export function checkUrl(req: Request, _res: Response, next: NextFunction): void {
  const url = req.originalUrl ?? req.url;
  const q = url.indexOf('?');
  const rawPath = q < 0 ? url : url.slice(0, q);
  const faults: FieldError[] = [];
  let path: string | undefined;
  try {
    path = decodeURIComponent(rawPath);
  } catch {
    faults.push({ field: '(path)', message: 'must be percent-encoded UTF-8' });
  }
  if (path !== undefined) faults.push(...inputFaults(path, '(path)'));
  if (q >= 0) {
    const rawQuery = url.slice(q + 1);
    if (!decodesAsUtf8(rawQuery)) faults.push({ field: '(query)', message: 'must be percent-encoded UTF-8' });
    else faults.push(...inputFaults(req.query, ''));
  }
  next(faults.length ? refuse(faults) : undefined);
}
