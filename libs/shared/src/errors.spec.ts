import { Metadata, status, type ServiceError } from '@grpc/grpc-js';
import { AppError, errorBody, errorCodes, fromGrpcError, isAppError, isBackendUnavailable, toAppError, toGrpcError, type ErrorCode } from './errors';

/** What a grpc-js client would hand back for the error a server sent with toGrpcError. */
function asServiceError(err: AppError): ServiceError {
  const sent = toGrpcError(err);
  const error = new Error(`${sent.code} ${sent.details}`) as ServiceError;
  return Object.assign(error, { code: sent.code!, details: sent.details!, metadata: sent.metadata! });
}

function plainGrpcError(code: status, details: string, metadata = new Metadata()): ServiceError {
  return Object.assign(new Error(details), { code, details, metadata }) as ServiceError;
}

describe('AppError over gRPC', () => {
  it('keeps code, message and details through toGrpcError -> fromGrpcError', () => {
    const original = AppError.invalid(
      [
        { field: 'email', message: 'invalid email format' },
        { field: 'roles[2]', message: 'must look like role_<name>' },
      ],
      'The request is invalid',
    );
    const back = fromGrpcError(asServiceError(original));
    expect(back).toBeInstanceOf(AppError);
    expect(back.code).toBe('invalid_request');
    expect(back.message).toBe('The request is invalid');
    expect(back.details).toEqual(original.details);
  });

  it.each(Object.keys(errorCodes) as ErrorCode[])('round-trips the code %s', (code) => {
    const back = fromGrpcError(asServiceError(new AppError(code, `message of ${code}`)));
    expect(back.code).toBe(code);
    expect(back.message).toBe(`message of ${code}`);
    expect(back.details).toEqual([]);
  });

  it('carries mfa_required as PERMISSION_DENIED with its code in the secsvc-error-code trailer', () => {
    const sent = toGrpcError(new AppError('mfa_required', 'Multi-factor authentication required', [{ field: 'mfa', message: 'required' }]));
    expect(sent.code).toBe(status.PERMISSION_DENIED);
    expect(sent.metadata!.get('secsvc-error-code')).toEqual(['mfa_required']);
    const back = fromGrpcError(asServiceError(new AppError('mfa_required', 'Multi-factor authentication required', [{ field: 'mfa', message: 'required' }])));
    expect([back.code, back.httpStatus, back.details]).toEqual(['mfa_required', 403, [{ field: 'mfa', message: 'required' }]]);
  });

  it('sends the matching gRPC status code', () => {
    expect(toGrpcError(new AppError('not_found', 'x')).code).toBe(status.NOT_FOUND);
    expect(toGrpcError(new AppError('unauthorized', 'x')).code).toBe(status.UNAUTHENTICATED);
    expect(toGrpcError(new AppError('forbidden', 'x')).code).toBe(status.PERMISSION_DENIED);
    expect(toGrpcError(new AppError('mfa_required', 'x')).code).toBe(status.PERMISSION_DENIED);
    expect(toGrpcError(new AppError('conflict', 'x')).code).toBe(status.ALREADY_EXISTS);
    expect(toGrpcError(new AppError('rate_limited', 'x')).code).toBe(status.RESOURCE_EXHAUSTED);
    expect(toGrpcError(new AppError('invalid_request', 'x')).code).toBe(status.INVALID_ARGUMENT);
    expect(toGrpcError(new AppError('internal_error', 'x')).code).toBe(status.INTERNAL);
    expect(toGrpcError(new AppError('unavailable', 'x')).code).toBe(status.UNAVAILABLE);
  });

  it('ignores details metadata that is not JSON', () => {
    const md = new Metadata();
    md.set('secsvc-error-code', 'conflict');
    md.set('secsvc-error-details-bin', Buffer.from('{not json'));
    const back = fromGrpcError(plainGrpcError(status.ALREADY_EXISTS, 'email taken', md));
    expect(back.code).toBe('conflict');
    expect(back.message).toBe('email taken');
    expect(back.details).toEqual([]);
  });

  it('falls back to the status mapping for an unknown code in metadata', () => {
    for (const bogus of ['no_such_code', 'toString', 'constructor', '__proto__']) {
      const md = new Metadata();
      md.set('secsvc-error-code', bogus);
      const back = fromGrpcError(plainGrpcError(status.NOT_FOUND, 'user not found', md));
      expect(back.code).toBe('not_found');
      expect(back.httpStatus).toBe(404);
    }
  });
});

describe('HTTP status of each code', () => {
  it.each([
    ['invalid_request', 400],
    ['unauthorized', 401],
    ['forbidden', 403],
    ['mfa_required', 403],
    ['not_found', 404],
    ['method_not_allowed', 405],
    ['request_timeout', 408],
    ['conflict', 409],
    ['payload_too_large', 413],
    ['unsupported_media_type', 415],
    ['range_not_satisfiable', 416],
    ['rate_limited', 429],
    ['request_header_fields_too_large', 431],
    ['internal_error', 500],
    ['unavailable', 503],
  ] as const)('%s is %i', (code, http) => {
    expect(new AppError(code, 'x').httpStatus).toBe(http);
    expect(errorCodes[code].http).toBe(http);
  });

  it('has no other codes', () => {
    expect(Object.keys(errorCodes).sort()).toEqual(
      [
        'conflict',
        'forbidden',
        'internal_error',
        'invalid_request',
        'method_not_allowed',
        'mfa_required',
        'not_found',
        'payload_too_large',
        'range_not_satisfiable',
        'rate_limited',
        'request_header_fields_too_large',
        'request_timeout',
        'unauthorized',
        'unavailable',
        'unsupported_media_type',
      ].sort(),
    );
  });
});

describe('fromGrpcError for plain gRPC statuses', () => {
  it.each([status.UNAVAILABLE, status.DEADLINE_EXCEEDED])('maps status %i to unavailable', (code) => {
    const back = fromGrpcError(plainGrpcError(code, 'connect ECONNREFUSED 10.0.0.7:50051'));
    expect(back.code).toBe('unavailable');
    expect(back.httpStatus).toBe(503);
    expect(back.message).not.toContain('ECONNREFUSED');
    expect(back.message).not.toContain('10.0.0.7');
  });

  it('maps NOT_FOUND to not_found', () => {
    const back = fromGrpcError(plainGrpcError(status.NOT_FOUND, 'user not found'));
    expect(back.code).toBe('not_found');
    expect(back.httpStatus).toBe(404);
  });

  it('maps the other known statuses', () => {
    expect(fromGrpcError(plainGrpcError(status.INVALID_ARGUMENT, 'bad')).code).toBe('invalid_request');
    expect(fromGrpcError(plainGrpcError(status.UNAUTHENTICATED, 'who')).code).toBe('unauthorized');
    expect(fromGrpcError(plainGrpcError(status.PERMISSION_DENIED, 'no')).code).toBe('forbidden');
    expect(fromGrpcError(plainGrpcError(status.ALREADY_EXISTS, 'dup')).code).toBe('conflict');
    expect(fromGrpcError(plainGrpcError(status.RESOURCE_EXHAUSTED, 'slow down')).code).toBe('rate_limited');
  });

  it.each([status.UNKNOWN, status.INTERNAL, status.DATA_LOSS, status.FAILED_PRECONDITION, 999])(
    'maps status %i to internal_error without leaking its details',
    (code) => {
      const leak = 'ERROR: relation "users" does not exist at SELECT password_hash FROM users';
      const back = fromGrpcError(plainGrpcError(code, leak));
      expect(back.code).toBe('internal_error');
      expect(back.httpStatus).toBe(500);
      expect(back.message).not.toContain('password_hash');
      expect(back.message).not.toContain('SELECT');
      expect(back.details).toEqual([]);
    },
  );

  it('treats something that is not a gRPC error as an internal error', () => {
    const back = fromGrpcError(new Error('socket hang up at 10.0.0.7'));
    expect(back.code).toBe('internal_error');
    expect(back.message).not.toContain('10.0.0.7');
  });
});

describe('toAppError', () => {
  it('keeps an AppError as it is', () => {
    const err = AppError.notFound('user');
    expect(toAppError(err)).toBe(err);
    expect(err.message).toBe('user not found');
    expect(isAppError(err)).toBe(true);
  });

  it('turns a random Error into internal_error and hides its message', () => {
    const err = toAppError(new Error('duplicate key value violates unique constraint "users_email_key"'));
    expect(err).toBeInstanceOf(AppError);
    expect(err.code).toBe('internal_error');
    expect(err.httpStatus).toBe(500);
    expect(err.message).not.toContain('users_email_key');
    expect(err.message).not.toContain('duplicate');
    expect(err.details).toEqual([]);
    expect(isAppError(new Error('x'))).toBe(false);
  });

  it('turns thrown non-errors into internal_error', () => {
    for (const thrown of ['boom', 42, null, undefined, { code: 'not_found' }]) {
      expect(toAppError(thrown).code).toBe('internal_error');
    }
  });
});

describe('errorBody', () => {
  it('has code, message and the request id, and no details when there are none', () => {
    const body = errorBody(AppError.notFound('user'), 'req_abc123');
    expect(body).toEqual({ error: { code: 'not_found', message: 'user not found' }, meta: { requestId: 'req_abc123' } });
    expect('details' in body.error).toBe(false);
  });

  it('includes the field details when present', () => {
    const body = errorBody(AppError.field('email', 'invalid email format'), 'req_xyz');
    expect(body).toEqual({
      error: {
        code: 'invalid_request',
        message: 'The request is invalid',
        details: [{ field: 'email', message: 'invalid email format' }],
      },
      meta: { requestId: 'req_xyz' },
    });
  });

  it('serialises to the documented JSON shape', () => {
    const json = JSON.parse(JSON.stringify(errorBody(new AppError('rate_limited', 'Too many requests'), 'req_1')));
    expect(Object.keys(json)).toEqual(['error', 'meta']);
    expect(json.error.code).toBe('rate_limited');
  });
});

describe('isBackendUnavailable (503 unavailable, never a 500, for a store that is down)', () => {
  it('knows socket errors, PostgreSQL connection SQLSTATEs and node-postgres connection messages', () => {
    const cases: [unknown, boolean][] = [
      [Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }), true],
      [Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }), true],
      [Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }), true],
      [Object.assign(new Error('the database system is starting up'), { code: '57P03' }), true],
      [Object.assign(new Error('connection failure'), { code: '08006' }), true],
      [Object.assign(new Error('sorry, too many clients already'), { code: '53300' }), true],
      [Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014' }), true],
      [new Error('Connection terminated unexpectedly'), true],
      [new Error('timeout exceeded when trying to connect'), true],
      [new AggregateError([Object.assign(new Error('a'), { code: 'ECONNREFUSED' }), Object.assign(new Error('b'), { code: 'ECONNREFUSED' })]), true],
      [Object.assign(new Error('duplicate key'), { code: '23505' }), false],
      [Object.assign(new Error('syntax error'), { code: '42601' }), false],
      [new TypeError("Cannot read properties of undefined (reading 'id')"), false],
      [new AggregateError([]), false],
      ['ECONNREFUSED', false],
      [undefined, false],
    ];
    expect(cases.map(([err]) => isBackendUnavailable(err))).toEqual(cases.map(([, want]) => want));
  });

  it('toAppError makes them 503 unavailable; anything else unknown stays a 500 internal_error', () => {
    const down = toAppError(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }));
    expect([down.code, down.httpStatus, down.message]).toEqual(['unavailable', 503, 'A backing service is unavailable']);
    expect(toAppError(new Error('boom')).code).toBe('internal_error');
  });
});
