// Policy input rules (no I/O): what each field accepts and refuses, and the field each error names.
import { AppError, newId } from '@secsvc/shared';
import { actionError, cidrError, principalError, resourceError, validateCreate, validateSimulation, validateUpdate } from './policies';

const valid = { name: 'n', effect: 'allow', principals: ['*'], actions: ['read'], resources: ['*'] };

function errorOf(fn: () => unknown): AppError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    return err as AppError;
  }
  throw new Error('expected an error');
}

describe('entries', () => {
  const userId = newId('user');
  test.each(['*', 'user:${self}', `user:${userId}`, 'role:a', 'role:0dev_ops-1', `role:${'a'.repeat(63)}`])('principal %s is valid', (p) =>
    expect(principalError(p)).toBeUndefined(),
  );
  test.each(['', 'role:', 'role:_x', 'role:Dev', `role:${'a'.repeat(64)}`, 'user:', 'user:bob', `user:${userId}x`, 'user:*', 'group:x', 'role_dev', '**'])(
    'principal %j is refused',
    (p) => expect(principalError(p)).toEqual(expect.any(String)),
  );
  test.each(['*', 'read', 'users:read', 'a.b_c-d', `a${'b'.repeat(63)}`])('action %s is valid', (a) => expect(actionError(a)).toBeUndefined());
  test.each(['', 'Read', '1read', 'read*', 'a b', `a${'b'.repeat(64)}`])('action %j is refused', (a) => expect(actionError(a)).toEqual(expect.any(String)));
  test.each(['*', '/*', '/a', '/a/b', '/a/*', '/users/${self}', '/users/${self}/keys/*', '/${self}/*', '/a:b/c.d', `/${'x'.repeat(511)}`])(
    'resource %s is valid',
    (r) => expect(resourceError(r)).toBeUndefined(),
  );
  test.each(['', 'a', '/', '//', '/a/', '/a//b', '/a*', '/*/a', '/a/**', '/a/*/', '/x${self}', '/${self}x', '/a b', '/a\tb', `/${'x'.repeat(512)}`, '**'])(
    'resource %j is refused',
    (r) => expect(resourceError(r)).toEqual(expect.any(String)),
  );
  test.each(['10.0.0.0/8', '10.1.2.3/8', '0.0.0.0/0', '1.2.3.4/32', '::/0', '2001:db8::/32', '2001:db8::1/128', 'fe80::/10'])('CIDR %s is valid', (c) =>
    expect(cidrError(c)).toBeUndefined(),
  );
  test.each(['10.0.0.0', '10.0.0.0/', '10.0.0.0/33', '10.0.0.0/08', '10.0.0.0/-1', '10.0.0/8', '010.0.0.0/8', '::/129', 'fe80::1%eth0/64', '::ffff:10.0.0.0/104', '::ffff:a00:0/104', 'x/8', ' 10.0.0.0/8', '1::2:/64'])(
    'CIDR %j is refused',
    (c) => expect(cidrError(c)).toEqual(expect.any(String)),
  );
});

describe('validateCreate', () => {
  it('defaults description and conditions', () => {
    expect(validateCreate(valid)).toEqual({ ...valid, description: '', conditions: {} });
    expect(validateCreate({ ...valid, conditions: { ip: undefined } }).conditions).toEqual({});
    expect(validateCreate({ ...valid, conditions: null }).conditions).toEqual({});
  });

  it('names nested and unknown condition fields', () => {
    const err = errorOf(() => validateCreate({ ...valid, conditions: { ip: { allowlist: ['10.0.0.0/8', 'bad'] }, geo: {}, __proto__x: 1 } }));
    expect(err.details.map((d) => d.field)).toEqual(['conditions.geo', 'conditions.__proto__x', 'conditions.ip.allowlist[1]']);
    expect(errorOf(() => validateCreate({ ...valid, conditions: JSON.parse('{"__proto__":{}}') })).details[0]!.field).toBe('conditions.__proto__');
    expect(errorOf(() => validateCreate({ ...valid, conditions: [] })).details[0]!.field).toBe('conditions');
    expect(errorOf(() => validateCreate({ ...valid, conditions: { ip: {} } })).details[0]!.field).toBe('conditions.ip.allowlist');
    expect(errorOf(() => validateCreate({ ...valid, conditions: { ip: { allowlist: '10.0.0.0/8' } } })).details[0]!.field).toBe('conditions.ip.allowlist');
    const many = Array.from({ length: 101 }, () => '10.0.0.0/8');
    expect(errorOf(() => validateCreate({ ...valid, conditions: { ip: { allowlist: many } } })).details[0]!.field).toBe('conditions.ip.allowlist');
  });

  it('requires name, effect and the lists', () => {
    expect(errorOf(() => validateCreate({})).details.map((d) => d.field)).toEqual(['name', 'effect', 'principals', 'actions', 'resources']);
  });
});

describe('validateUpdate', () => {
  it('keeps only the fields present and refuses an empty change', () => {
    expect(validateUpdate({ name: 'x', conditions: {} })).toEqual({ name: 'x', conditions: {} });
    expect(validateUpdate({ description: '' })).toEqual({ description: '' });
    expect(errorOf(() => validateUpdate({})).details[0]!.field).toBe('(body)');
    expect(errorOf(() => validateUpdate({ resources: ['/ok', 'bad'] })).details[0]!.field).toBe('resources[1]');
  });
});

describe('validateSimulation', () => {
  const id = newId('user');
  it('reads the user id and treats an empty ip as none', () => {
    expect(validateSimulation({ principal: `user:${id}`, action: 'read', resource: '/x', ip: '', roles: ['role_a'] })).toEqual({
      userId: id,
      action: 'read',
      resource: '/x',
      ip: undefined,
      roles: ['role_a'],
    });
  });
  it('names principal, action, resource and ip', () => {
    const err = errorOf(() => validateSimulation({ principal: 'role:dev', action: '', resource: '', ip: '300.1.1.1', roles: [] }));
    expect(err.details.map((d) => d.field)).toEqual(['principal', 'action', 'resource', 'ip']);
  });
});
