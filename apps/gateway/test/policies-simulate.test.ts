// POST /v1/policies/simulate at the gateway, over an in-memory fake of the policy port (the real service and
// engine are covered by apps/policy's tests and end to end): the body's shape rules for drafts, mode and
// explain (400 naming the field, the service never called), what is forwarded, and the JSON form of the
// explanations.
import type { policy } from '@secsvc/proto';
import { newId } from '@secsvc/shared';
import { conditionsOf, toProtoConditions } from '../src/routes/policies/schemas';
import { call, detailsOf, expectError, startGateway, type TestGateway } from './support/gateway';

/** The policy port's simulate, recording requests and answering what the test sets. */
class FakePolicy {
  readonly requests: policy.SimulateRequest[] = [];
  answer: policy.SimulateResponse = {
    allowed: false,
    effect: 'deny',
    matchedPolicies: [],
    evaluationTimeMs: 0,
    decisionId: newId('dec'),
    explanations: [],
    notMatchedCount: 0,
    mfaRequired: false,
    mfaMaxAgeSeconds: 0,
    reason: 'no policy allows it',
  };
  async simulate(req: policy.SimulateRequest): Promise<policy.SimulateResponse> {
    this.requests.push(req);
    return this.answer;
  }
}

let gw: TestGateway;
let fakePolicy: FakePolicy;
let userId: string;

beforeAll(async () => {
  gw = await startGateway();
  fakePolicy = new FakePolicy();
  // the routes reach the policy service through the shared clients object
  (gw.deps.clients as { policy: unknown }).policy = fakePolicy;
  userId = (await gw.fake.createUser({ environment: 'live', email: 'sim@example.com', name: 'Sim', roles: ['role_dev'], metadataJson: '' })).id;
});

afterAll(async () => {
  await gw.close();
});

beforeEach(() => {
  fakePolicy.requests.length = 0;
});

const draft = (over: Record<string, unknown> = {}) => ({ name: 'd', effect: 'allow', principals: ['*'], actions: ['read'], resources: ['/x'], ...over });
const simulate = (body: Record<string, unknown>) => call(gw, 'POST', '/v1/policies/simulate', { json: { principal: `user:${userId}`, action: 'read', resource: '/x', ...body } });

describe('drafts, mode and explain: what is forwarded', () => {
  it('forwards drafts (ids, descriptions, conditions in either spelling), the mode and explain', async () => {
    const res = await simulate({
      policies: [
        draft(),
        draft({ id: 'draft_office', description: 'office', conditions: { 'ip.allowlist': ['10.0.0.0/8'] } }),
        draft({ conditions: { ip: { allowlist: ['192.0.2.0/24'] } } }),
      ],
      mode: 'replace',
      explain: true,
      context: { ip: '10.1.2.3' },
    });
    expect(res.status).toBe(200);
    expect(fakePolicy.requests).toHaveLength(1);
    const sent = fakePolicy.requests[0]!;
    expect(sent).toMatchObject({ principal: `user:${userId}`, action: 'read', resource: '/x', ip: '10.1.2.3', roles: ['role_dev'], mode: 'replace', explain: true });
    expect(sent.policies).toEqual([
      { id: '', name: 'd', description: '', effect: 'allow', principals: ['*'], actions: ['read'], resources: ['/x'], conditions: undefined },
      { id: 'draft_office', name: 'd', description: 'office', effect: 'allow', principals: ['*'], actions: ['read'], resources: ['/x'], conditions: { ip: { allowlist: ['10.0.0.0/8'] } } },
      { id: '', name: 'd', description: '', effect: 'allow', principals: ['*'], actions: ['read'], resources: ['/x'], conditions: { ip: { allowlist: ['192.0.2.0/24'] } } },
    ]);
  });

  it('without drafts or explain: no drafts, no mode, explain false', async () => {
    expect((await simulate({})).status).toBe(200);
    expect(fakePolicy.requests[0]).toMatchObject({ policies: [], mode: '', explain: false });
  });

  it('forwards context.mfa and context.mfaAgeSeconds (default false and 0), and drafts with mfa conditions in their proto form', async () => {
    expect((await simulate({ context: { ip: '10.1.2.3', mfa: true, mfaAgeSeconds: 120 } })).status).toBe(200);
    expect((await simulate({ context: { mfa: true } })).status).toBe(200);
    expect((await simulate({ context: {} })).status).toBe(200);
    expect(fakePolicy.requests.map((r) => [r.ip, r.mfa, r.mfaAgeSeconds])).toEqual([
      ['10.1.2.3', true, 120],
      ['', true, 0],
      ['', false, 0],
    ]);
    await simulate({ policies: [draft({ conditions: { mfa: true } }), draft({ conditions: { mfa: {} } }), draft({ conditions: { mfa: { maxAgeSeconds: 300 }, 'ip.allowlist': ['10.0.0.0/8'] } })] });
    expect(fakePolicy.requests[3]!.policies.map((p) => p.conditions)).toEqual([
      { ip: undefined, mfa: { required: true } },
      { ip: undefined, mfa: { options: {} } },
      { ip: { allowlist: ['10.0.0.0/8'] }, mfa: { options: { maxAgeSeconds: 300 } } },
    ]);
  });
});

describe('drafts, mode and explain: 400 naming the field, nothing forwarded', () => {
  it.each([
    ['a draft entry of the wrong type', ['policies[1].principals[1]'], { policies: [draft(), draft({ principals: ['*', 7] })] }],
    ['a draft without name, with a numeric effect', ['policies[0].effect', 'policies[0].name'], { policies: [draft({ name: undefined, effect: 1 })] }],
    ['an empty draft id', ['policies[0].id'], { policies: [draft({ id: '' })] }],
    ['an unknown draft field', ['policies[0].extra'], { policies: [draft({ extra: true })] }],
    ['an unknown draft condition', ['policies[0].conditions.time'], { policies: [draft({ conditions: { time: {} } })] }],
    ['policies not an array', ['policies'], { policies: {} }],
    ['101 drafts', ['policies'], { policies: Array.from({ length: 101 }, () => draft()) }],
    ['a mode without policies', ['mode'], { mode: 'replace' }],
    ['an unknown mode', ['mode'], { policies: [], mode: 'upsert' }],
    ['explain not a boolean', ['explain'], { explain: 'yes' }],
    ['context.mfa not a boolean', ['context.mfa'], { context: { mfa: 'true' } }],
    ['a negative mfaAgeSeconds', ['context.mfaAgeSeconds'], { context: { mfa: true, mfaAgeSeconds: -1 } }],
    ['a fractional mfaAgeSeconds', ['context.mfaAgeSeconds'], { context: { mfa: true, mfaAgeSeconds: 1.5 } }],
    ['a textual mfaAgeSeconds', ['context.mfaAgeSeconds'], { context: { mfaAgeSeconds: '5' } }],
    ['an unknown context field', ['context.acr'], { context: { acr: 'mfa' } }],
    ['a draft mfa condition of false', ['policies[0].conditions.mfa'], { policies: [draft({ conditions: { mfa: false } })] }],
    ['a draft mfa max age out of range', ['policies[0].conditions.mfa.maxAgeSeconds'], { policies: [draft({ conditions: { mfa: { maxAgeSeconds: 31536001 } } })] }],
  ])('%s: 400 naming %j', async (_label, fields, body) => {
    const res = await simulate(body);
    expectError(res, 400, 'invalid_request');
    expect(detailsOf(res).map((d) => d.field)).toEqual(fields);
    expect(fakePolicy.requests).toHaveLength(0);
  });

  it('takes 100 drafts', async () => {
    expect((await simulate({ policies: Array.from({ length: 100 }, () => draft()) })).status).toBe(200);
    expect(fakePolicy.requests[0]!.policies).toHaveLength(100);
  });
});

describe('the JSON form of explanations', () => {
  it('adds explanations and notMatchedCount with explain only; actual is the principals, the value, or the ip (null when none)', async () => {
    fakePolicy.answer = {
      ...fakePolicy.answer,
      explanations: [
        { policyId: 'draft_0', name: 'a', effect: 'allow', failed: 'principal', condition: '', expected: ['role:ops'], actualPrincipals: [`user:${userId}`, 'role:dev'] },
        { policyId: 'pol_1', name: 'b', effect: 'deny', failed: 'resource', condition: '', expected: ['/y'], actual: '/x', actualPrincipals: [] },
        { policyId: 'pol_2', name: 'c', effect: 'allow', failed: 'condition', condition: 'ip.allowlist', expected: ['10.0.0.0/8'], actualPrincipals: [] },
      ],
      notMatchedCount: 3,
    };
    const explained = (await simulate({ explain: true })).body.data;
    expect(explained.explanations).toEqual([
      { policyId: 'draft_0', name: 'a', effect: 'allow', failed: 'principal', expected: ['role:ops'], actual: [`user:${userId}`, 'role:dev'] },
      { policyId: 'pol_1', name: 'b', effect: 'deny', failed: 'resource', expected: ['/y'], actual: '/x' },
      { policyId: 'pol_2', name: 'c', effect: 'allow', failed: 'condition', condition: 'ip.allowlist', expected: ['10.0.0.0/8'], actual: null },
    ]);
    expect(explained.notMatchedCount).toBe(3);
    const plain = (await simulate({ explain: false })).body.data;
    expect(Object.keys(plain).sort()).toEqual(['allowed', 'decisionId', 'effect', 'evaluationTimeMs', 'matchedPolicies', 'mfaMaxAgeSeconds', 'mfaRequired', 'reason']);
  });

  it('carries mfaRequired, its max age and the reason; an mfa explanation gives the ages as strings (null without MFA)', async () => {
    fakePolicy.answer = {
      ...fakePolicy.answer,
      allowed: false,
      mfaRequired: true,
      mfaMaxAgeSeconds: 300,
      reason: 'denied: requires MFA within 300 s',
      explanations: [
        { policyId: 'pol_3', name: 'd', effect: 'allow', failed: 'condition', condition: 'mfa.maxAgeSeconds', expected: ['300'], actual: '900', actualPrincipals: [] },
        { policyId: 'pol_4', name: 'e', effect: 'allow', failed: 'condition', condition: 'mfa', expected: [], actualPrincipals: [] },
      ],
      notMatchedCount: 2,
    };
    const data = (await simulate({ explain: true, context: { mfa: true, mfaAgeSeconds: 900 } })).body.data;
    expect(data).toMatchObject({ allowed: false, mfaRequired: true, mfaMaxAgeSeconds: 300, reason: 'denied: requires MFA within 300 s' });
    expect(data.explanations).toEqual([
      { policyId: 'pol_3', name: 'd', effect: 'allow', failed: 'condition', condition: 'mfa.maxAgeSeconds', expected: ['300'], actual: '900' },
      { policyId: 'pol_4', name: 'e', effect: 'allow', failed: 'condition', condition: 'mfa', expected: [], actual: null },
    ]);
  });

  it('documents policies, mode and explain in the OpenAPI request body and the explanations in the result', async () => {
    const doc = (await call(gw, 'GET', '/v1/openapi.json', { auth: false })).body;
    const op = doc.paths['/v1/policies/simulate'].post;
    const body = op.requestBody.content['application/json'].schema;
    expect(Object.keys(body.properties).sort()).toEqual(['action', 'context', 'explain', 'mode', 'policies', 'principal', 'resource']);
    expect(Object.keys(body.properties.context.properties)).toEqual(['ip', 'mfa', 'mfaAgeSeconds']);
    expect(body.properties.context.properties.mfaAgeSeconds).toMatchObject({ type: 'integer', minimum: 0 });
    expect(body.properties.context.additionalProperties).toBe(false);
    expect(body.properties.policies.maxItems).toBe(100);
    expect(Object.keys(body.properties.policies.items.properties)).toContain('id');
    expect(body.properties.mode.enum).toEqual(['merge', 'replace']);
    expect(op.responses['200'].content['application/json'].schema.properties.data).toEqual({ $ref: '#/components/schemas/SimulationResult' });
    const data = doc.components.schemas.SimulationResult;
    expect(Object.keys(data.properties)).toEqual(expect.arrayContaining(['explanations', 'notMatchedCount', 'mfaRequired', 'mfaMaxAgeSeconds', 'reason']));
    expect(data.required).toEqual(expect.arrayContaining(['mfaRequired', 'mfaMaxAgeSeconds', 'reason']));
    // a policy's conditions show mfa as written
    expect(doc.components.schemas.Policy.properties.conditions.properties.mfa.anyOf).toEqual([
      { type: 'boolean', const: true },
      expect.objectContaining({ type: 'object', properties: { maxAgeSeconds: expect.objectContaining({ type: 'integer' }) } }),
    ]);
    expect(data.properties.explanations.items).toEqual({ $ref: '#/components/schemas/PolicyExplanation' });
    expect(doc.components.schemas.PolicyExplanation.properties.failed.enum).toEqual(['principal', 'action', 'resource', 'condition']);
  });
});

describe('conditions between JSON and the policy service', () => {
  it('keeps the mfa form as written both ways: true, {} and {maxAgeSeconds}', () => {
    const forms = [{}, { mfa: true as const }, { mfa: {} }, { mfa: { maxAgeSeconds: 300 } }, { ip: { allowlist: ['10.0.0.0/8'] }, mfa: true as const }];
    for (const conditions of forms) {
      const sent = toProtoConditions(conditions);
      expect(conditionsOf({ conditions: sent } as policy.Policy)).toEqual(conditions);
    }
    expect(toProtoConditions({ mfa: true })).toEqual({ ip: undefined, mfa: { required: true } });
    expect(toProtoConditions({ mfa: { maxAgeSeconds: 60 } })).toEqual({ ip: undefined, mfa: { options: { maxAgeSeconds: 60 } } });
    expect(conditionsOf({ conditions: undefined } as policy.Policy)).toEqual({});
  });
});
