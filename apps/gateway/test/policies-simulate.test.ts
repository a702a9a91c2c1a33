// POST /v1/policies/simulate at the gateway, over an in-memory fake of the policy port (the real service and
// engine are covered by apps/policy's tests and end to end): the body's shape rules for drafts, mode and
// explain (400 naming the field, the service never called), what is forwarded, and the JSON form of the
// explanations.
import type { policy } from '@secsvc/proto';
import { newId } from '@secsvc/shared';
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
    expect(Object.keys(plain).sort()).toEqual(['allowed', 'decisionId', 'effect', 'evaluationTimeMs', 'matchedPolicies']);
  });

  it('documents policies, mode and explain in the OpenAPI request body and the explanations in the result', async () => {
    const doc = (await call(gw, 'GET', '/v1/openapi.json', { auth: false })).body;
    const op = doc.paths['/v1/policies/simulate'].post;
    const body = op.requestBody.content['application/json'].schema;
    expect(Object.keys(body.properties).sort()).toEqual(['action', 'context', 'explain', 'mode', 'policies', 'principal', 'resource']);
    expect(body.properties.policies.maxItems).toBe(100);
    expect(Object.keys(body.properties.policies.items.properties)).toContain('id');
    expect(body.properties.mode.enum).toEqual(['merge', 'replace']);
    expect(op.responses['200'].content['application/json'].schema.properties.data).toEqual({ $ref: '#/components/schemas/SimulationResult' });
    const data = doc.components.schemas.SimulationResult;
    expect(Object.keys(data.properties)).toEqual(expect.arrayContaining(['explanations', 'notMatchedCount']));
    expect(data.properties.explanations.items).toEqual({ $ref: '#/components/schemas/PolicyExplanation' });
    expect(doc.components.schemas.PolicyExplanation.properties.failed.enum).toEqual(['principal', 'action', 'resource', 'condition']);
  });
});
