// Errors of the /v1 API as the console shows them: the message, the request id (meta.requestId, else the
// X-Request-Id header) and the details, each next to the form field it names.

export interface FieldDetail {
  field: string;
  message: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: FieldDetail[] = [],
    readonly requestId?: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

interface ErrorBody {
  error?: { code?: unknown; message?: unknown; details?: unknown };
  meta?: { requestId?: unknown };
}

/** The API's error answer (`{error: {code, message, details}, meta: {requestId}}`, or anything else) as an ApiError. */
export function apiErrorOf(body: unknown, response: Response): ApiError {
  const b = (body && typeof body === 'object' ? body : {}) as ErrorBody;
  const requestId = typeof b.meta?.requestId === 'string' ? b.meta.requestId : (response.headers.get('x-request-id') ?? undefined);
  const code = typeof b.error?.code === 'string' ? b.error.code : `http_${response.status}`;
  const message = typeof b.error?.message === 'string' ? b.error.message : `The server answered ${response.status} ${response.statusText}`.trim();
  const details = Array.isArray(b.error?.details)
    ? (b.error.details as unknown[]).filter((d): d is FieldDetail => !!d && typeof (d as FieldDetail).field === 'string' && typeof (d as FieldDetail).message === 'string')
    : [];
  return new ApiError(response.status, code, message, details, requestId);
}

/** The data of an openapi-fetch answer, or its error thrown as an ApiError. */
export function unwrap<T>(result: { data?: T; error?: unknown; response: Response }): T {
  if (result.error !== undefined || !result.response.ok) throw apiErrorOf(result.error, result.response);
  return result.data as T;
}

/** The form field a detail is about: `roles[1]` and `metadata.a.b` belong to roles and metadata; `(body)` to the form. */
export function fieldRoot(field: string): string {
  if (field === '(body)' || field === '') return '';
  return field.split(/[.[]/, 1)[0]!;
}

/** Details grouped by the form field they name ('' for the form as a whole). */
export function detailsByField(details: readonly FieldDetail[]): Map<string, FieldDetail[]> {
  const out = new Map<string, FieldDetail[]>();
  for (const d of details) {
    const root = fieldRoot(d.field);
    out.set(root, [...(out.get(root) ?? []), d]);
  }
  return out;
}

/** The details of `error` for the fields a form has; the others (and those of no field) go to the form. */
export function splitDetails(error: unknown, fields: readonly string[]): { byField: Map<string, FieldDetail[]>; rest: FieldDetail[] } {
  const byField = new Map<string, FieldDetail[]>();
  const rest: FieldDetail[] = [];
  if (!(error instanceof ApiError)) return { byField, rest };
  for (const [root, list] of detailsByField(error.details)) {
    if (fields.includes(root)) byField.set(root, list);
    else rest.push(...list);
  }
  return { byField, rest };
}
