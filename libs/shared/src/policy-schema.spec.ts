// The shared policy rules: what each field accepts and refuses, every fault at once, each named by its path.
import type { z } from 'zod';
import { newId } from './ids';
import {
  actionError,
  draftIdError,
  draftIdSchema,
  duplicateDraftIds,
  policyChangesSchema,
  policyConditionsSchema,
  policyFieldsSchema,
  policyLimits,
  POLICY_PATTERNS,
  principalError,
  resourceError,
} from './policy-schema';
import { fieldErrors } from './validation';

const valid = { name: 'n', effect: 'allow', principals: ['*'], actions: ['read'], resources: ['*'] };

function faults(schema: z.ZodType, value: unknown): string[] {
  const r = schema.safeParse(value);
  return r.success ? [] : fieldErrors(r.error).map((e) => e.field);
}

describe('policyFieldsSchema', () => {
  it('takes a valid policy; description and conditions are optional; conditions come out as {} or {ip}', () => {
    expect(policyFieldsSchema.parse(valid)).toEqual(valid);
    expect(policyFieldsSchema.parse({ ...valid, conditions: null }).conditions).toEqual({});
    expect(policyFieldsSchema.parse({ ...valid, conditions: { ip: undefined } }).conditions).toEqual({});
    expect(policyFieldsSchema.parse({ ...valid, conditions: { ip: { allowlist: ['10.0.0.0/8'] } } }).conditions).toEqual({ ip: { allowlist: ['10.0.0.0/8'] } });
  });

  it('reports the four faults of one policy at once, by their full paths', () => {
    const input = { ...valid, effect: 'maybe', principals: ['group:x'], conditions: { ip: { allowlist: ['10.0.0.0/8', 'bad'] }, time: {} } };
    expect(faults(policyFieldsSchema, input)).toEqual(['effect', 'principals[0]', 'conditions.time', 'conditions.ip.allowlist[1]']);
  });

  it('names every faulty entry, bound and required field', () => {
    expect(faults(policyFieldsSchema, {})).toEqual(['name', 'effect', 'principals', 'actions', 'resources']);
    expect(
      faults(policyFieldsSchema, {
        name: 'x'.repeat(policyLimits.nameMaxLength + 1),
        description: 'd'.repeat(policyLimits.descriptionMaxLength + 1),
        effect: 1,
        principals: ['*', 'role:_x', `user:${newId('user')}`, 7],
        actions: [],
        resources: Array.from({ length: policyLimits.maxEntries + 1 }, (_, i) => `/r${i}`),
        conditions: { ip: { allowlist: [], blocklist: ['10.0.0.0/8'] } },
      }),
    ).toEqual(['name', 'description', 'effect', 'principals[1]', 'principals[3]', 'actions', 'resources', 'conditions.ip.blocklist', 'conditions.ip.allowlist']);
  });

  it('names an unknown condition, including __proto__, before the allowlist entries; a wrong-typed ip or conditions by itself', () => {
    expect(faults(policyConditionsSchema, JSON.parse('{"__proto__":{},"ip":{"allowlist":["x"]}}'))).toEqual(['__proto__', 'ip.allowlist[0]']);
    expect(faults(policyConditionsSchema, [])).toEqual(['(body)']);
    expect(faults(policyConditionsSchema, { ip: 'x' })).toEqual(['ip']);
    expect(faults(policyConditionsSchema, { ip: {} })).toEqual(['ip.allowlist']);
  });

  it('gives the service messages', () => {
    const r = policyFieldsSchema.safeParse({ ...valid, name: '  ', effect: 'permit', conditions: { geo: 1, ip: { allowlist: ['10.0.0.0/33'] } } });
    expect(r.success || fieldErrors(r.error)).toEqual([
      { field: 'name', message: 'must not be empty' },
      { field: 'effect', message: 'must be allow or deny' },
      { field: 'conditions.geo', message: 'unknown condition (the conditions are ip and mfa)' },
      { field: 'conditions.ip.allowlist[0]', message: 'the prefix length must be 0 to 32' },
    ]);
  });
});

describe('conditions.mfa', () => {
  const conditions = (mfa: unknown) => policyFieldsSchema.safeParse({ ...valid, conditions: { mfa } });

  it('takes true or an object with an optional integer maxAgeSeconds from 1 to 31536000, kept as written', () => {
    expect(policyConditionsSchema.parse({ mfa: true })).toEqual({ mfa: true });
    expect(policyConditionsSchema.parse({ mfa: {} })).toEqual({ mfa: {} });
    expect(policyConditionsSchema.parse({ mfa: { maxAgeSeconds: 300 } })).toEqual({ mfa: { maxAgeSeconds: 300 } });
    expect(policyConditionsSchema.parse({ mfa: { maxAgeSeconds: 1 } })).toEqual({ mfa: { maxAgeSeconds: 1 } });
    expect(policyConditionsSchema.parse({ mfa: { maxAgeSeconds: policyLimits.mfaMaxAgeSeconds } })).toEqual({ mfa: { maxAgeSeconds: 31_536_000 } });
    // undefined keys are absent (a decoded protobuf message), as is a null mfa
    expect(policyConditionsSchema.parse({ mfa: { maxAgeSeconds: undefined } })).toEqual({ mfa: {} });
    expect(policyConditionsSchema.parse({ mfa: null })).toEqual({});
    expect(policyConditionsSchema.parse({ ip: { allowlist: ['10.0.0.0/8'] }, mfa: true })).toEqual({ ip: { allowlist: ['10.0.0.0/8'] }, mfa: true });
    expect(conditions(true).data?.conditions).toEqual({ mfa: true });
  });

  it('refuses false and other forms, naming conditions.mfa', () => {
    for (const bad of [false, 'true', 1, [], [true]]) {
      const r = conditions(bad);
      expect(r.success || fieldErrors(r.error)).toEqual([{ field: 'conditions.mfa', message: 'must be true or an object with an optional maxAgeSeconds' }]);
    }
  });

  it('refuses a maxAgeSeconds that is not an integer from 1 to 31536000, naming conditions.mfa.maxAgeSeconds', () => {
    for (const bad of [0, -1, 1.5, policyLimits.mfaMaxAgeSeconds + 1, '300', null, true, Number.NaN, Infinity]) {
      const r = conditions({ maxAgeSeconds: bad });
      expect([bad, r.success || fieldErrors(r.error)]).toEqual([bad, [{ field: 'conditions.mfa.maxAgeSeconds', message: 'must be an integer from 1 to 31536000' }]]);
    }
  });

  it('names an unknown field of the object and an unknown condition beside it, all at once', () => {
    expect(faults(policyFieldsSchema, { ...valid, conditions: { mfa: { maxAgeSeconds: 0, acr: 'x' }, time: {} } })).toEqual([
      'conditions.time',
      'conditions.mfa.acr',
      'conditions.mfa.maxAgeSeconds',
    ]);
  });
});

describe('policyChangesSchema', () => {
  it('takes any subset, with the same rules', () => {
    expect(policyChangesSchema.parse({ name: 'x' })).toEqual({ name: 'x' });
    expect(faults(policyChangesSchema, { resources: ['/ok', 'bad'], effect: 'maybe' })).toEqual(['effect', 'resources[1]']);
  });
});

describe('draft ids', () => {
  it('takes draft_<name> and pol_ ids; refuses others', () => {
    const pol = newId('pol');
    expect(draftIdSchema.parse('draft_office')).toBe('draft_office');
    expect(draftIdSchema.parse(pol)).toBe(pol);
    for (const bad of ['', 'draft_', 'Draft_x', 'pol_nope', 7]) expect(draftIdSchema.safeParse(bad).success).toBe(false);
  });

  it('names each draft whose id an earlier one took (a draft without a valid id is draft_<index>)', () => {
    expect(duplicateDraftIds([undefined, 'draft_0', 'draft_x', 'draft_x', 'bad', ''])).toEqual([
      { index: 1, message: expect.stringContaining('duplicate id draft_0') },
      { index: 3, message: expect.stringContaining('duplicate id draft_x') },
    ]);
  });
});

describe('POLICY_PATTERNS state the same rules as the checks (the OpenAPI document uses them)', () => {
  const user = `user_${'0123456789abcdefghjkmnpqrs'}`;
  const samples = {
    principal: ['*', 'user:${self}', `user:${user}`, 'role:admin', 'role:a-b_c', 'role:', 'role:-a', 'role:A', `role:${'a'.repeat(64)}`, 'user:', 'user:x', `user:${user}x`, 'group:x', '', '**', 'user:${self}x', ' *'],
    action: ['*', 'read', 'users:read', 'a.b-c_d', 'a'.repeat(64), 'a'.repeat(65), 'Read', '1a', '', '**', 'read ', 'read*'],
    resource: ['*', '/*', '/', '/users', '/users/*', '/users/${self}', '/users/${self}/*', '/users/x${self}', '/users/$', '/a/{b}', '//', '/a//b', '/a/*/b', '/a*', 'users', '', '/a b', '/a\tb', '/a\u00a0b', '/a\u0001b', '/ü/ok', `/${'a'.repeat(600)}`, '/users/*/'],
    draftId: ['draft_a', 'draft_a-b_1', `draft_${'a'.repeat(64)}`, `draft_${'a'.repeat(65)}`, 'draft_', 'Draft_a', `pol_${'0123456789abcdefghjkmnpqrs'}`, 'pol_x', ''],
  };
  const checks = { principal: principalError, action: actionError, resource: resourceError, draftId: draftIdError };
  it.each(Object.keys(samples) as (keyof typeof samples)[])('%s', (kind) => {
    for (const value of samples[kind]) {
      const byCheck = checks[kind](value) === undefined && value.length <= (kind === 'resource' ? policyLimits.resourceMaxLength : Infinity);
      expect([kind, value, POLICY_PATTERNS[kind].test(value) && value.length <= (kind === 'resource' ? policyLimits.resourceMaxLength : Infinity)]).toEqual([kind, value, byCheck]);
    }
  });
});
