import { ApiError } from '../../api/errors';
import {
  changesOf,
  createBody,
  draftOf,
  EMPTY_SIMULATOR,
  formatActual,
  formatExpected,
  formatFailed,
  formValuesOf,
  mergeDetails,
  parseList,
  policyKind,
  sameJson,
  simulateBody,
  simulationDetails,
  type Policy,
  type PolicyFormValues,
} from './policy-form';

const stored: Policy = {
  id: 'pol_01jd0000000000000000000000',
  name: 'readers',
  description: '',
  effect: 'allow',
  principals: ['role:reader'],
  actions: ['read'],
  resources: ['/users/*', '/files/a,b'],
  conditions: { ip: { allowlist: ['10.0.0.0/8'] } },
  createdAt: '2025-01-01T00:00:00.000Z',
  updatedAt: '2025-01-02T00:00:00.000Z',
};

const values = (over: Partial<PolicyFormValues> = {}): PolicyFormValues => ({ ...formValuesOf(stored), ...over });

describe('policy form', () => {
  it('reads lists one entry a line, trimmed, and keeps commas inside an entry', () => {
    expect(parseList(' role:a \r\n\n role:b\n')).toEqual(['role:a', 'role:b']);
    expect(parseList('/files/a,b')).toEqual(['/files/a,b']);
    expect(parseList('Admin !')).toEqual(['Admin !']); // sent as typed: the API names principals[0]
    expect(parseList('  \n')).toEqual([]);
  });

  it('shows a stored policy in the editor and reads it back unchanged', () => {
    const v = formValuesOf(stored);
    expect(v).toEqual({
      name: 'readers',
      description: '',
      effect: 'allow',
      principals: 'role:reader',
      actions: 'read',
      resources: '/users/*\n/files/a,b',
      conditions: '{\n  "ip": {\n    "allowlist": [\n      "10.0.0.0/8"\n    ]\n  }\n}',
    });
    expect(changesOf(stored, v)).toEqual({ ok: true, value: {} });
  });

  it('builds the POST body: description only when given, conditions {} when empty', () => {
    const body = createBody({ name: 'n', description: '', effect: 'deny', principals: 'role:a\nuser:${self}', actions: 'read\nupdate', resources: '*', conditions: '  ' });
    expect(body).toEqual({ ok: true, value: { name: 'n', effect: 'deny', principals: ['role:a', 'user:${self}'], actions: ['read', 'update'], resources: ['*'], conditions: {} } });
    expect(createBody({ ...values(), description: 'why' })).toMatchObject({ ok: true, value: { description: 'why' } });
  });

  it('names conditions that are not JSON instead of sending them', () => {
    const bad = createBody(values({ conditions: '{"ip": ' }));
    expect(bad.ok).toBe(false);
    expect(!bad.ok && bad.message).toMatch(/^is not valid JSON: /);
    expect(changesOf(stored, values({ conditions: '{' })).ok).toBe(false);
    expect(draftOf(values({ conditions: '[' })).ok).toBe(false);
  });

  it('sends only what changed, whole lists and conditions (they replace the stored ones)', () => {
    expect(changesOf(stored, values({ name: 'readers 2', resources: '/users/*\n/files/a,b\n/logs' }))).toEqual({ ok: true, value: { name: 'readers 2', resources: ['/users/*', '/files/a,b', '/logs'] } });
    expect(changesOf(stored, values({ conditions: '{"ip": {"allowlist": ["10.0.0.0/8"]}, "mfa": true}' }))).toEqual({ ok: true, value: { conditions: { ip: { allowlist: ['10.0.0.0/8'] }, mfa: true } } });
    expect(changesOf(stored, values({ conditions: '' }))).toEqual({ ok: true, value: { conditions: {} } });
    expect(changesOf({ ...stored, description: 'old' }, values({ description: '' }))).toEqual({ ok: true, value: { description: '' } });
    expect(changesOf(stored, values({ effect: 'deny', principals: 'role:reader\n' }))).toEqual({ ok: true, value: { effect: 'deny' } });
  });

  it('compares JSON whatever the key order', () => {
    expect(sameJson({ a: 1, b: [1, { c: 2 }] }, { b: [1, { c: 2 }], a: 1 })).toBe(true);
    expect(sameJson({ a: 1 }, { a: 1, b: undefined })).toBe(false);
    expect(sameJson([1], { 0: 1 })).toBe(false);
    expect(sameJson(null, {})).toBe(false);
  });
});

describe('simulate request', () => {
  const sim = { ...EMPTY_SIMULATOR, principal: 'user:user_1', action: 'read', resource: '/users/user_1' };

  it('sends the draft of a stored policy under its id (it stands in for it) and asks for the explanation', () => {
    const draft = draftOf(values({ actions: 'read\ndelete' }), stored.id);
    expect(draft.ok).toBe(true);
    const body = simulateBody({ ...sim, ip: '10.1.2.3' }, draft.ok ? draft.value : undefined);
    expect(body).toEqual({
      principal: 'user:user_1',
      action: 'read',
      resource: '/users/user_1',
      context: { ip: '10.1.2.3' },
      policies: [{ id: stored.id, name: 'readers', effect: 'allow', principals: ['role:reader'], actions: ['read', 'delete'], resources: ['/users/*', '/files/a,b'], conditions: { ip: { allowlist: ['10.0.0.0/8'] } } }],
      mode: 'merge',
      explain: true,
    });
  });

  it('sends a new policy as draft_0, alone with replace, and no draft for the stored policies only', () => {
    const draft = draftOf(values());
    const d = draft.ok ? draft.value : undefined;
    expect(d).not.toHaveProperty('id');
    expect(simulateBody({ ...sim, mode: 'replace' }, d)).toMatchObject({ policies: [d], mode: 'replace' });
    const storedOnly = simulateBody({ ...sim, mode: 'stored' }, d);
    expect(storedOnly).toEqual({ principal: 'user:user_1', action: 'read', resource: '/users/user_1', explain: true });
    expect(simulateBody({ ...sim, mode: 'merge' }, undefined)).not.toHaveProperty('policies');
  });

  it('sends the MFA context only with MFA, the age as a number for the API to judge', () => {
    expect(simulateBody({ ...sim, mfaAgeSeconds: '60' }, undefined)).not.toHaveProperty('context');
    expect(simulateBody({ ...sim, mfa: true }, undefined).context).toEqual({ mfa: true });
    expect(simulateBody({ ...sim, mfa: true, mfaAgeSeconds: '900' }, undefined).context).toEqual({ mfa: true, mfaAgeSeconds: 900 });
    expect(simulateBody({ ...sim, mfa: true, mfaAgeSeconds: '1.5' }, undefined).context).toEqual({ mfa: true, mfaAgeSeconds: 1.5 });
  });

  it('sends the inputs as typed', () => {
    expect(simulateBody({ ...sim, principal: 'user_1', action: ' read' }, undefined)).toMatchObject({ principal: 'user_1', action: ' read' });
  });

  it('puts the API details under the simulator fields, the draft ones under the editor fields', () => {
    const error = new ApiError(400, 'invalid_request', 'The request is invalid', [
      { field: 'principal', message: 'must look like user:<id>' },
      { field: 'context.ip', message: 'must be an IPv4 or IPv6 address' },
      { field: 'context.mfaAgeSeconds', message: 'must be an integer of at least 0' },
      { field: 'policies[0].principals[1]', message: 'bad principal' },
      { field: 'policies[0].conditions.ip.allowlist[0]', message: 'bad CIDR' },
      { field: 'mode', message: 'only with policies' },
    ]);
    const { simulator, draft, rest } = simulationDetails(error);
    expect(Object.fromEntries([...simulator].map(([k, v]) => [k, v.map((d) => d.message)]))).toEqual({
      principal: ['must look like user:<id>'],
      'context.ip': ['must be an IPv4 or IPv6 address'],
      'context.mfaAgeSeconds': ['must be an integer of at least 0'],
    });
    expect([...draft.keys()]).toEqual(['principals', 'conditions']);
    expect(draft.get('principals')).toEqual([{ field: 'policies[0].principals[1]', message: 'bad principal' }]);
    expect(rest.map((d) => d.field)).toEqual(['policies[0].principals[1]', 'policies[0].conditions.ip.allowlist[0]', 'mode']);
    expect(simulationDetails(new Error('offline'))).toEqual({ simulator: new Map(), draft: new Map(), rest: [] });
  });

  it('merges the details of saving and of simulating field by field', () => {
    const a = new Map([['name', [{ field: 'name', message: 'x' }]]]);
    const b = new Map([
      ['name', [{ field: 'policies[0].name', message: 'y' }]],
      ['actions', [{ field: 'policies[0].actions[0]', message: 'z' }]],
    ]);
    const merged = mergeDetails(a, b);
    expect(merged.get('name')!.map((d) => d.message)).toEqual(['x', 'y']);
    expect([...merged.keys()]).toEqual(['name', 'actions']);
  });

  it('words the result: which policy a matched id is, and each explanation', () => {
    expect([policyKind('draft_0'), policyKind(stored.id, stored.id), policyKind('pol_other', stored.id)]).toEqual(['draft', 'edited', 'stored']);
    expect(formatActual(['user:user_1', 'role:reader'])).toBe('user:user_1, role:reader');
    expect(formatActual(null)).toBe('(none)');
    expect(formatActual('read')).toBe('read');
    expect(formatExpected(['10.0.0.0/8', '192.168.0.0/16'])).toBe('10.0.0.0/8, 192.168.0.0/16');
    expect(formatExpected([])).toBe('(no bound)');
    expect(formatFailed('condition', 'ip.allowlist')).toBe('condition ip.allowlist');
    expect(formatFailed('action')).toBe('action');
  });
});
