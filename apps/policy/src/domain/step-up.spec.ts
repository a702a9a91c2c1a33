// The step-up answer (mfaRequired, mfaMaxAgeSeconds) and the simulator's reason, over the real engine with
// in-memory policies: when a second evaluation happens, which policies count for the max age, drafts included.
import { loadEngine, type AuthzRequest, type EnginePolicy, type MfaCondition, type PolicyEngine } from '../engine';
import { decisionReason, NO_STEP_UP, stepUpOf } from './step-up';

const request: AuthzRequest = { principal: { id: 'user_1', roles: ['role_ops'] }, action: 'read', resource: '/docs/a' };
const policy = (id: string, over: Partial<EnginePolicy> = {}): EnginePolicy => ({
  id,
  name: `name of ${id}`,
  effect: 'allow',
  principals: ['*'],
  actions: ['read'],
  resources: ['/docs/*'],
  ...over,
});
const mfa = (id: string, condition: MfaCondition, over: Partial<EnginePolicy> = {}) => policy(id, { conditions: { mfa: condition }, ...over });

let engine: PolicyEngine;
beforeAll(async () => {
  engine = await loadEngine();
});

/** The step-up answer for `req` over `policies`, and how many evaluations it took (the decision's included). */
function stepUp(policies: EnginePolicy[], req: AuthzRequest = request) {
  engine.setPolicies(policies);
  let evaluations = 0;
  const counting = {
    evaluate: (r: AuthzRequest) => (evaluations++, engine.evaluate(r)),
    storedPolicy: (id: string) => engine.storedPolicy(id),
    hasMfaConditions: engine.hasMfaConditions,
  };
  const decision = counting.evaluate(req);
  return { decision, ...stepUpOf(counting, req, decision), evaluations };
}

describe('stepUpOf', () => {
  it('costs an allowed request nothing more', () => {
    expect(stepUp([policy('pol_a')])).toMatchObject({ mfaRequired: false, mfaMaxAgeSeconds: 0, evaluations: 1 });
  });

  it('says a denial an MFA completed just now would allow, with no max age for `true` and `{}`', () => {
    expect(stepUp([mfa('pol_a', true)])).toMatchObject({ mfaRequired: true, mfaMaxAgeSeconds: 0, evaluations: 2 });
    expect(stepUp([mfa('pol_a', {})])).toMatchObject({ mfaRequired: true, mfaMaxAgeSeconds: 0 });
  });

  it('gives the smallest max age among the policies that made the difference', () => {
    const policies = [mfa('pol_a', { maxAgeSeconds: 300 }), mfa('pol_b', { maxAgeSeconds: 60 }), mfa('pol_c', true), mfa('pol_d', { maxAgeSeconds: 5 }, { actions: ['delete'] })];
    expect(stepUp(policies)).toMatchObject({ mfaRequired: true, mfaMaxAgeSeconds: 60 });
    // an MFA older than both maxima: pol_c (any age) allows; without it, the same answer as without an MFA
    expect(stepUp(policies, { ...request, context: { mfa: true, mfaAgeSeconds: 301 } })).toMatchObject({ mfaRequired: false, evaluations: 1 });
    expect(stepUp(policies.slice(0, 2), { ...request, context: { mfa: true, mfaAgeSeconds: 301 } })).toMatchObject({ mfaRequired: true, mfaMaxAgeSeconds: 60 });
  });

  it('never asks for a step-up when an MFA cannot lift the denial', () => {
    // nothing would match
    expect(stepUp([mfa('pol_a', true, { resources: ['/other'] })])).toMatchObject({ mfaRequired: false, evaluations: 2 });
    // a matching deny stays matched with an MFA (deny wins): not evaluated again
    expect(stepUp([mfa('pol_a', true), policy('pol_d', { effect: 'deny' })])).toMatchObject({ mfaRequired: false, evaluations: 1 });
    // a deny that an MFA brings in
    expect(stepUp([policy('pol_a', { actions: ['other'] }), mfa('pol_d', true, { effect: 'deny' })])).toMatchObject({ mfaRequired: false });
    // the ip condition still fails
    expect(stepUp([policy('pol_a', { conditions: { ip: { allowlist: ['10.0.0.0/8'] }, mfa: true } })], { ...request, context: { ip: '192.0.2.1' } })).toMatchObject({
      mfaRequired: false,
    });
  });

  it('does not evaluate again when no policy in play has an mfa condition', () => {
    expect(stepUp([policy('pol_a', { actions: ['other'] })])).toMatchObject({ mfaRequired: false, evaluations: 1 });
    // a stored one counts unless drafts replace the stored policies; a draft's counts
    expect(stepUp([mfa('pol_a', true, { actions: ['other'] })], { ...request, drafts: { mode: 'replace', policies: [policy('draft_0', { actions: ['other'] })] } })).toMatchObject({ evaluations: 1 });
    expect(stepUp([policy('pol_a', { actions: ['other'] })], { ...request, drafts: { mode: 'merge', policies: [mfa('draft_0', true)] } })).toMatchObject({ mfaRequired: true, evaluations: 2 });
    expect(stepUp([mfa('pol_a', true)], { ...request, drafts: { mode: 'merge', policies: [] } })).toMatchObject({ mfaRequired: true, evaluations: 2 });
  });

  it('does not evaluate again a request that already carries an MFA completed just now', () => {
    expect(stepUp([mfa('pol_a', { maxAgeSeconds: 60 }, { actions: ['other'] })], { ...request, context: { mfa: true, mfaAgeSeconds: 0 } })).toMatchObject({
      mfaRequired: false,
      evaluations: 1,
    });
  });

  it('reads the max age of drafts from the drafts (a draft standing in for a stored policy included)', () => {
    const stored = [mfa('pol_a', { maxAgeSeconds: 30 })];
    const merge = (policies: EnginePolicy[]): AuthzRequest => ({ ...request, drafts: { mode: 'merge', policies } });
    expect(stepUp(stored, merge([mfa('draft_0', { maxAgeSeconds: 600 })]))).toMatchObject({ mfaRequired: true, mfaMaxAgeSeconds: 30 });
    expect(stepUp(stored, merge([mfa('pol_a', { maxAgeSeconds: 600 })]))).toMatchObject({ mfaRequired: true, mfaMaxAgeSeconds: 600 });
    expect(stepUp(stored, merge([mfa('pol_a', true)]))).toMatchObject({ mfaRequired: true, mfaMaxAgeSeconds: 0 });
    expect(stepUp(stored, { ...request, drafts: { mode: 'replace', policies: [mfa('draft_0', { maxAgeSeconds: 90 })] } })).toMatchObject({
      mfaRequired: true,
      mfaMaxAgeSeconds: 90,
    });
  });
});

describe('decisionReason', () => {
  const allow = (id: string, name = `name of ${id}`) => ({ id, name, effect: 'allow' as const });
  const deny = (id: string, name = `name of ${id}`) => ({ id, name, effect: 'deny' as const });

  it('names the allowing policy, and how many more allowed it', () => {
    expect(decisionReason({ allowed: true, effect: 'allow', matchedPolicies: [allow('pol_a', 'docs readers')] }, NO_STEP_UP)).toBe('allowed by docs readers');
    expect(decisionReason({ allowed: true, effect: 'allow', matchedPolicies: [allow('pol_a'), allow('pol_b'), allow('pol_c')] }, NO_STEP_UP)).toBe(
      'allowed by name of pol_a (and 2 more)',
    );
  });

  it('names the first matching deny', () => {
    expect(decisionReason({ allowed: false, effect: 'deny', matchedPolicies: [deny('pol_d', 'no exports'), allow('pol_a')] }, NO_STEP_UP)).toBe('denied by policy no exports');
  });

  it('says a step-up is needed, with its max age; else the default deny', () => {
    const denied = { allowed: false, effect: 'deny' as const, matchedPolicies: [] };
    expect(decisionReason(denied, { mfaRequired: true, mfaMaxAgeSeconds: 0 })).toBe('denied: requires MFA');
    expect(decisionReason(denied, { mfaRequired: true, mfaMaxAgeSeconds: 300 })).toBe('denied: requires MFA within 300 s');
    expect(decisionReason(denied, NO_STEP_UP)).toBe('no policy allows it');
  });
});
