import { ApiError, apiErrorOf, detailsByField, fieldRoot, splitDetails, unwrap } from './errors';

const response = (status: number, headers: Record<string, string> = {}) => new Response(null, { status, headers });

describe('API errors', () => {
  it('reads the API error shape: code, message, details and the request id', () => {
    const body = { error: { code: 'invalid_request', message: 'The request is invalid', details: [{ field: 'roles[0]', message: 'must look like role_<name>' }, { nope: 1 }] }, meta: { requestId: 'req_1' } };
    const err = apiErrorOf(body, response(400, { 'x-request-id': 'req_header' }));
    expect(err).toBeInstanceOf(ApiError);
    expect({ ...err, message: err.message }).toMatchObject({ status: 400, code: 'invalid_request', message: 'The request is invalid', details: [{ field: 'roles[0]', message: 'must look like role_<name>' }], requestId: 'req_1' });
  });

  it('falls back to the status and the X-Request-Id header for any other answer', () => {
    const err = apiErrorOf('<html>Bad gateway</html>', response(502, { 'x-request-id': 'req_h' }));
    expect([err.code, err.message, err.requestId, err.details]).toEqual(['http_502', 'The server answered 502', 'req_h', []]);
  });

  it('unwraps data, and throws the error of a failed answer', () => {
    expect(unwrap({ data: { a: 1 }, response: response(200) })).toEqual({ a: 1 });
    expect(() => unwrap({ error: { error: { code: 'not_found', message: 'User not found' } }, response: response(404) })).toThrow('User not found');
  });

  it('groups details by the form field they name', () => {
    expect(['roles[1]', 'metadata.a.b', 'name', '(body)', 'email'].map(fieldRoot)).toEqual(['roles', 'metadata', 'name', '', 'email']);
    const details = [
      { field: 'roles[1]', message: 'bad' },
      { field: 'roles', message: 'dup' },
      { field: '(body)', message: 'give one' },
      { field: 'cursor', message: 'expired' },
    ];
    expect(detailsByField(details).get('roles')).toHaveLength(2);
    const { byField, rest } = splitDetails(new ApiError(400, 'invalid_request', 'x', details), ['roles', 'name']);
    expect([...byField.keys()]).toEqual(['roles']);
    expect(rest.map((d) => d.field)).toEqual(['(body)', 'cursor']);
    expect(splitDetails(new Error('x'), ['roles'])).toEqual({ byField: new Map(), rest: [] });
  });
});
