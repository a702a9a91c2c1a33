// Step-up over HTTP (issue 23): a user's call that the policies would allow after a multi-factor
// authentication is answered 403 `mfa_required` in the one error shape, naming where to step up; the policy
// service is told whether the session carries an MFA and how old it is. Over in-memory fakes of identity
// (sessions) and policy (Authorize); the decision itself is the policy service's (apps/policy tests).
import type { identity, policy } from '@secsvc/proto';
import { newId } from '@secsvc/shared';
import { call, expectError, startGateway, type TestGateway } from './support/gateway';

const fakePolicy = {
  requests: [] as policy.AuthorizeRequest[],
  answer: { allowed: false, matchedPolicies: [], decisionId: newId('dec'), mfaRequired: true, mfaMaxAgeSeconds: 0 } as policy.AuthorizeResponse,
  async authorize(req: policy.AuthorizeRequest): Promise<policy.AuthorizeResponse> {
    fakePolicy.requests.push(req);
    return fakePolicy.answer;
  },
};

let gw: TestGateway;
const userId = newId('user');
const token = (name: string) => `sst_${name}_${'x'.repeat(32)}`;

/** A session of the user; `mfaAt` (epoch seconds) when it carries a completed MFA. */
function session(name: string, mfaAt?: number): string {
  const principal = {
    sessionId: newId('ses'),
    userId,
    environment: 'live',
    roles: ['role_dev'],
    expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
    email: 'stepup@example.com',
    amr: mfaAt === undefined ? ['pwd'] : ['pwd', 'otp', 'mfa'],
    acr: mfaAt === undefined ? 'urn:secsvc:acr:1fa' : 'urn:secsvc:acr:mfa',
    ...(mfaAt === undefined ? {} : { mfaAt: new Date(mfaAt * 1000).toISOString() }),
  } as identity.SessionPrincipal;
  gw.fake.sessions.set(token(name), principal);
  return token(name);
}

const get = (bearer: string) => call(gw, 'GET', `/v1/users/${userId}`, { auth: false, headers: { authorization: `Bearer ${bearer}` } });

beforeAll(async () => {
  gw = await startGateway({ policy: fakePolicy as never });
});

afterAll(async () => {
  await gw.close();
});

beforeEach(() => {
  fakePolicy.requests.length = 0;
});

describe('a call an MFA would allow', () => {
  it('is 403 mfa_required naming the step-up, without a challenge header for a session', async () => {
    fakePolicy.answer = { ...fakePolicy.answer, allowed: false, mfaRequired: true, mfaMaxAgeSeconds: 0 };
    const res = await get(session('plain'));
    expectError(res, 403, 'mfa_required');
    expect(res.body.error).toEqual({
      code: 'mfa_required',
      message: 'Multi-factor authentication required: step up with POST /v1/auth/step-up',
      details: [{ field: 'mfa', message: 'a multi-factor authentication is required' }],
    });
    expect(res.headers.get('www-authenticate')).toBeNull();
    expect(fakePolicy.requests).toEqual([expect.objectContaining({ userId, action: 'read', resource: `/users/${userId}`, mfa: false, mfaAgeSeconds: 0 })]);
  });

  it('names the max age; the session says how long ago its MFA was', async () => {
    fakePolicy.answer = { ...fakePolicy.answer, allowed: false, mfaRequired: true, mfaMaxAgeSeconds: 300 };
    const res = await get(session('old', Math.floor(Date.now() / 1000) - 900));
    expectError(res, 403, 'mfa_required');
    expect(res.body.error.message).toBe('Multi-factor authentication required (completed within the last 300 seconds): step up with POST /v1/auth/step-up');
    const [sent] = fakePolicy.requests;
    expect(sent!.mfa).toBe(true);
    expect(sent!.mfaAgeSeconds).toBeGreaterThanOrEqual(900);
    expect(sent!.mfaAgeSeconds).toBeLessThan(960);
  });

  it('is a plain forbidden when an MFA would not help', async () => {
    fakePolicy.answer = { ...fakePolicy.answer, allowed: false, mfaRequired: false, mfaMaxAgeSeconds: 0 };
    const res = await get(session('denied'));
    expectError(res, 403, 'forbidden');
    expect(res.body.error.message).toBe('Denied by policy');
  });
});
