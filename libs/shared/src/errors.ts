import { Metadata, status as GrpcStatus, type ServiceError } from '@grpc/grpc-js';

/** The error codes of the API (DESIGN.md "Conventions" 4), each with its one HTTP status and gRPC status. */
export const errorCodes = {
  invalid_request: { http: 400, grpc: GrpcStatus.INVALID_ARGUMENT },
  unauthorized: { http: 401, grpc: GrpcStatus.UNAUTHENTICATED },
  forbidden: { http: 403, grpc: GrpcStatus.PERMISSION_DENIED },
  /** Denied by the policies, but a multi-factor authentication (step-up) would allow it. */
  mfa_required: { http: 403, grpc: GrpcStatus.PERMISSION_DENIED },
  not_found: { http: 404, grpc: GrpcStatus.NOT_FOUND },
  method_not_allowed: { http: 405, grpc: GrpcStatus.UNIMPLEMENTED },
  conflict: { http: 409, grpc: GrpcStatus.ALREADY_EXISTS },
  /** The HTTP parser's refusals: a request not received in full in time, a request line and headers over its limit. */
  request_timeout: { http: 408, grpc: GrpcStatus.DEADLINE_EXCEEDED },
  payload_too_large: { http: 413, grpc: GrpcStatus.INVALID_ARGUMENT },
  unsupported_media_type: { http: 415, grpc: GrpcStatus.INVALID_ARGUMENT },
  range_not_satisfiable: { http: 416, grpc: GrpcStatus.OUT_OF_RANGE },
  rate_limited: { http: 429, grpc: GrpcStatus.RESOURCE_EXHAUSTED },
  request_header_fields_too_large: { http: 431, grpc: GrpcStatus.INVALID_ARGUMENT },
  internal_error: { http: 500, grpc: GrpcStatus.INTERNAL },
  unavailable: { http: 503, grpc: GrpcStatus.UNAVAILABLE },
} as const;

export type ErrorCode = keyof typeof errorCodes;

export interface FieldError {
  field: string;
  message: string;
}

/** The one error type of the project: a code from the table above, a safe message, optional field details. */
export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details: FieldError[] = [],
    /** Seconds after which a retry may succeed (rate_limited): the HTTP Retry-After header. */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
    this.name = 'AppError';
  }

  get httpStatus(): number {
    return errorCodes[this.code].http;
  }

  static invalid(details: FieldError[], message = 'The request is invalid'): AppError {
    return new AppError('invalid_request', message, details);
  }

  static field(field: string, message: string): AppError {
    return AppError.invalid([{ field, message }]);
  }

  static notFound(what: string): AppError {
    return new AppError('not_found', `${what} not found`);
  }

  /**
   * The same error with each detail's field renamed: a caller that forwards another service's error names
   * the fields by their path in its own request (the policy service's `ip` is the gateway's `context.ip`).
   */
  withFields(rename: (field: string) => string): AppError {
    return new AppError(this.code, this.message, this.details.map((d) => ({ field: rename(d.field), message: d.message })), this.retryAfterSeconds);
  }
}

export function isAppError(err: unknown): err is AppError {
  return err instanceof AppError;
}

/** Anything thrown that is not an AppError is an internal error; its text never reaches a client. */
export function toAppError(err: unknown): AppError {
  if (isAppError(err)) return err;
  if (isBackendUnavailable(err)) return new AppError('unavailable', 'A backing service is unavailable');
  return new AppError('internal_error', 'An internal error occurred');
}

/** Socket errors of a connection that could not be made or was cut. */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'ENOTFOUND']);
/**
 * PostgreSQL SQLSTATEs of a server that is going away, starting up or full: class 08 (connection exception),
 * 57P01-57P03 (shut down by an administrator, crash shutdown, cannot connect now), 53300 (too many connections),
 * 57014 (statement cancelled: its statement_timeout ran out, see withStatementTimeout).
 */
const UNAVAILABLE_SQLSTATE = /^(08...|57P0[123]|53300|57014)$/;
/** The messages node-postgres gives a connection it lost or could not get in time (they carry no code). */
const PG_CONNECTION_MESSAGES = /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Connection terminated due to connection timeout)/;

/**
 * True when `err` says a backing store (PostgreSQL, a socket) cannot be reached right now, rather than that
 * the request or the code is wrong: the caller gets 503 `unavailable` (retry later), never a 500.
 */
export function isBackendUnavailable(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const e = err as { code?: unknown; message?: unknown; errors?: unknown };
  if (typeof e.code === 'string' && (NETWORK_CODES.has(e.code) || UNAVAILABLE_SQLSTATE.test(e.code))) return true;
  if (typeof e.message === 'string' && PG_CONNECTION_MESSAGES.test(e.message)) return true;
  // Connecting to a host with several addresses fails with an AggregateError of socket errors.
  return Array.isArray(e.errors) && e.errors.length > 0 && e.errors.every(isBackendUnavailable);
}

/** The JSON body of an error response (SPEC "Errors"). */
export function errorBody(err: AppError, requestId: string) {
  return {
    error: {
      code: err.code,
      message: err.message,
      ...(err.details.length ? { details: err.details } : {}),
    },
    meta: { requestId },
  };
}

const CODE_KEY = 'secsvc-error-code';
const DETAILS_KEY = 'secsvc-error-details-bin';
const RETRY_KEY = 'secsvc-retry-after';

/** AppError -> gRPC error (status code + our code and details in trailing metadata). */
export function toGrpcError(err: AppError): Partial<ServiceError> {
  const metadata = new Metadata();
  metadata.set(CODE_KEY, err.code);
  if (err.details.length) metadata.set(DETAILS_KEY, Buffer.from(JSON.stringify(err.details)));
  if (err.retryAfterSeconds !== undefined) metadata.set(RETRY_KEY, String(err.retryAfterSeconds));
  return { code: errorCodes[err.code].grpc, details: err.message, metadata };
}

const grpcFallback: Partial<Record<number, ErrorCode>> = {
  [GrpcStatus.INVALID_ARGUMENT]: 'invalid_request',
  [GrpcStatus.UNAUTHENTICATED]: 'unauthorized',
  [GrpcStatus.PERMISSION_DENIED]: 'forbidden',
  [GrpcStatus.NOT_FOUND]: 'not_found',
  [GrpcStatus.ALREADY_EXISTS]: 'conflict',
  [GrpcStatus.RESOURCE_EXHAUSTED]: 'rate_limited',
  [GrpcStatus.UNAVAILABLE]: 'unavailable',
  [GrpcStatus.DEADLINE_EXCEEDED]: 'unavailable',
  [GrpcStatus.UNIMPLEMENTED]: 'not_found',
};

function isServiceError(err: unknown): err is ServiceError {
  return typeof err === 'object' && err !== null && 'code' in err && 'metadata' in err;
}

/** gRPC error from a service -> AppError, keeping the service's code, message and field details. */
export function fromGrpcError(err: unknown): AppError {
  if (!isServiceError(err)) return toAppError(err);
  const code = err.metadata?.get(CODE_KEY)[0]?.toString();
  if (code && Object.hasOwn(errorCodes, code)) {
    const details = detailsOf(err.metadata.get(DETAILS_KEY)[0]?.toString() ?? '');
    const retry = Number(err.metadata.get(RETRY_KEY)[0]?.toString());
    return new AppError(code as ErrorCode, err.details || 'Request failed', details, Number.isFinite(retry) && retry > 0 ? retry : undefined);
  }
  const mapped = grpcFallback[err.code] ?? 'internal_error';
  const message =
    mapped === 'unavailable'
      ? 'A backing service is unavailable'
      : mapped === 'internal_error'
        ? 'An internal error occurred'
        : err.details || 'Request failed';
  return new AppError(mapped, message);
}

/** An error as one item of a batch call carries it (the CallError message of a batch's result). */
export interface CallError {
  code: string;
  message: string;
  detailsJson: string;
  retryAfterSeconds: number;
}

/** AppError -> the CallError of a batch item: what toGrpcError would have said of the same call alone. */
export function toCallError(err: AppError): CallError {
  return { code: err.code, message: err.message, detailsJson: err.details.length ? JSON.stringify(err.details) : '', retryAfterSeconds: err.retryAfterSeconds ?? 0 };
}

/** A batch item's CallError -> AppError, as fromGrpcError reads the same call's gRPC error (unknown codes are internal). */
export function fromCallError(e: CallError): AppError {
  if (!Object.hasOwn(errorCodes, e.code)) return new AppError('internal_error', 'An internal error occurred');
  return new AppError(e.code as ErrorCode, e.message || 'Request failed', detailsOf(e.detailsJson), e.retryAfterSeconds > 0 ? e.retryAfterSeconds : undefined);
}

/** The field details a service sent as JSON (none when absent or unreadable). */
function detailsOf(json: string): FieldError[] {
  if (!json) return [];
  try {
    const parsed: unknown = JSON.parse(json);
    return Array.isArray(parsed) ? (parsed as FieldError[]) : [];
  } catch {
    return [];
  }
}
