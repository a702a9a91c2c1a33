// Policy input rules (no I/O): what each field accepts and refuses, and the field each error names.
import { AppError, newId } from '@secsvc/shared';
import { actionError, cidrError, principalError, requestContext, resourceError, simulationLimits, validateCreate, validateSimulation, validateUpdate } from './policies';

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

  it('takes an mfa condition as written and names its faults by their full path', () => {
    expect(validateCreate({ ...valid, conditions: { mfa: true } }).conditions).toEqual({ mfa: true });
    expect(validateCreate({ ...valid, conditions: { mfa: {} } }).conditions).toEqual({ mfa: {} });
    expect(validateCreate({ ...valid, conditions: { mfa: { maxAgeSeconds: 300 }, ip: { allowlist: ['10.0.0.0/8'] } } }).conditions).toEqual({
      ip: { allowlist: ['10.0.0.0/8'] },
      mfa: { maxAgeSeconds: 300 },
    });
    expect(errorOf(() => validateCreate({ ...valid, conditions: { mfa: false } })).details).toEqual([
      { field: 'conditions.mfa', message: 'must be true or an object with an optional maxAgeSeconds' },
    ]);
    expect(errorOf(() => validateCreate({ ...valid, conditions: { mfa: { maxAgeSeconds: 31_536_001 } } })).details).toEqual([
      { field: 'conditions.mfa.maxAgeSeconds', message: 'must be an integer from 1 to 31536000' },
    ]);
    expect(errorOf(() => validateUpdate({ conditions: { mfa: { maxAge: 5 } } })).details.map((d) => d.field)).toEqual(['conditions.mfa.maxAge']);
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
      explain: false,
    });
  });
  it('names principal, action, resource, ip and mfaAgeSeconds', () => {
    const err = errorOf(() => validateSimulation({ principal: 'role:dev', action: '', resource: '', ip: '300.1.1.1', mfa: true, mfaAgeSeconds: -1, roles: [] }));
    expect(err.details.map((d) => d.field)).toEqual(['principal', 'action', 'resource', 'ip', 'mfaAgeSeconds']);
    expect(errorOf(() => validateSimulation({ principal: `user:${id}`, action: 'a', resource: '/r', ip: '', mfaAgeSeconds: 1.5, roles: [] })).details).toEqual([
      { field: 'mfaAgeSeconds', message: 'must be an integer of at least 0' },
    ]);
  });

  it('carries an MFA and its age (default 0) only when mfa is true', () => {
    const base = { principal: `user:${id}`, action: 'read', resource: '/x', ip: '', roles: [] };
    expect(validateSimulation({ ...base, mfa: true, mfaAgeSeconds: 120 }).mfa).toEqual({ ageSeconds: 120 });
    expect(validateSimulation({ ...base, mfa: true }).mfa).toEqual({ ageSeconds: 0 });
    expect(validateSimulation({ ...base, mfa: false, mfaAgeSeconds: 120 }).mfa).toBeUndefined();
    expect(requestContext(validateSimulation({ ...base, ip: '10.0.0.1', mfa: true, mfaAgeSeconds: 7 }))).toEqual({ ip: '10.0.0.1', mfa: true, mfaAgeSeconds: 7 });
    expect(requestContext(validateSimulation({ ...base, mfa: false, mfaAgeSeconds: 7 }))).toEqual({});
  });
});

describe('validateSimulation: drafts, mode and explain', () => {
  const id = newId('user');
  const base = { principal: `user:${id}`, action: 'read', resource: '/x', ip: '', roles: [] as string[] };
  const polId = newId('pol');

  it('numbers drafts draft_<index>, keeps a given draft_<name> or pol_ id, and defaults to merge', () => {
    const result = validateSimulation({
      ...base,
      policies: [valid, { ...valid, id: 'draft_office', description: 'd' }, { ...valid, id: polId, conditions: { ip: { allowlist: ['10.0.0.0/8'] } } }],
      explain: true,
    });
    expect(result.explain).toBe(true);
    expect(result.drafts).toEqual({
      mode: 'merge',
      policies: [
        { id: 'draft_0', name: 'n', effect: 'allow', principals: ['*'], actions: ['read'], resources: ['*'], conditions: {} },
        { id: 'draft_office', name: 'n', effect: 'allow', principals: ['*'], actions: ['read'], resources: ['*'], conditions: {} },
        { id: polId, name: 'n', effect: 'allow', principals: ['*'], actions: ['read'], resources: ['*'], conditions: { ip: { allowlist: ['10.0.0.0/8'] } } },
      ],
    });
  });

  it('takes replace, and replace with no drafts (nothing to evaluate); no drafts and no mode is stored only', () => {
    expect(validateSimulation({ ...base, policies: [valid], mode: 'replace' }).drafts?.mode).toBe('replace');
    expect(validateSimulation({ ...base, policies: [], mode: 'replace' }).drafts).toEqual({ mode: 'replace', policies: [] });
    expect(validateSimulation({ ...base, policies: [], mode: '' }).drafts).toBeUndefined();
    expect(validateSimulation({ ...base, policies: [], mode: 'merge' }).drafts).toEqual({ mode: 'merge', policies: [] });
  });

  it('validates each draft like a new policy, naming policies[<i>].<field>, with the request fields, all at once', () => {
    const err = errorOf(() =>
      validateSimulation({
        ...base,
        action: '',
        mode: 'upsert',
        policies: [
          valid,
          { ...valid, principals: ['group:x', '*'], conditions: { ip: { allowlist: ['10.0.0.0/33'] }, time: {} } },
          { name: '', effect: 'permit' },
          { ...valid, id: 'pol_bad' },
          { ...valid, id: 'draft_0' },
          { ...valid, id: 7 },
        ],
      }),
    );
    expect(err.code).toBe('invalid_request');
    expect(err.details.map((d) => d.field)).toEqual([
      'action',
      'mode',
      'policies[1].principals[0]',
      'policies[1].conditions.time',
      'policies[1].conditions.ip.allowlist[0]',
      'policies[2].name',
      'policies[2].effect',
      'policies[2].principals',
      'policies[2].actions',
      'policies[2].resources',
      'policies[3].id',
      'policies[4].id',
      'policies[5].id',
    ]);
    expect(err.details.find((d) => d.field === 'policies[4].id')!.message).toMatch(/duplicate id draft_0/);
  });

  it(`takes at most ${simulationLimits.maxDrafts} drafts`, () => {
    const many = Array.from({ length: simulationLimits.maxDrafts + 1 }, () => valid);
    expect(errorOf(() => validateSimulation({ ...base, policies: many })).details.map((d) => d.field)).toEqual(['policies']);
    expect(validateSimulation({ ...base, policies: many.slice(1) }).drafts?.policies).toHaveLength(simulationLimits.maxDrafts);
  });
});
