import { createHash } from 'node:crypto';
import {
  atHash,
  authenticationClaims,
  authenticationOfSession,
  checkAuthorization,
  parseScope,
  pkceMatches,
  redirectUriProblem,
  redirectWith,
  scopesOutside,
  administrativeScopeErrors,
  sessionAuthTime,
} from './oauth';

const params = (over: Partial<Parameters<typeof checkAuthorization>[0]> = {}) => ({
  responseType: 'code',
  scope: 'openid read:users',
  state: '',
  nonce: '',
  codeChallenge: '',
  codeChallengeMethod: '',
  prompt: '',
  maxAge: '',
  repeatedParams: [],
  ...over,
});
const confidential = { type: 'confidential', scopes: ['openid', 'read:users'] };
const challengeOf = (v: string) => createHash('sha256').update(v).digest('base64url');

describe('oauth domain rules', () => {
  it('parses space-separated scopes and finds the ones outside a set', () => {
    expect(parseScope('  openid  read:users openid ')).toEqual(['openid', 'read:users']);
    expect(scopesOutside(['a', 'b', 'c'], ['b'])).toEqual(['a', 'c']);
  });

  it('accepts https and loopback http redirect URIs only, exactly as written', () => {
    expect(redirectUriProblem('https://app.example.com/cb')).toBeUndefined();
    expect(redirectUriProblem('http://127.0.0.1:3000/cb')).toBeUndefined();
    expect(redirectUriProblem('http://app.example.com/cb')).toMatch(/loopback/);
    expect(redirectUriProblem('javascript:alert(1)')).toMatch(/https/);
    expect(redirectUriProblem('https://APP.example.com/cb')).toMatch(/canonical/);
    expect(redirectUriProblem('https://app.example.com/*')).toMatch(/wildcard/);
  });

  it('checks PKCE S256 in constant time and refuses malformed verifiers', () => {
    const verifier = 'a'.repeat(43);
    expect(pkceMatches(verifier, challengeOf(verifier))).toBe(true);
    expect(pkceMatches('b'.repeat(43), challengeOf(verifier))).toBe(false);
    expect(pkceMatches('short', challengeOf('short'))).toBe(false);
    expect(pkceMatches('a'.repeat(129), challengeOf('a'.repeat(129)))).toBe(false);
  });

  it('computes at_hash as the left half of SHA-256', () => {
    expect(atHash('token')).toBe(createHash('sha256').update('token').digest().subarray(0, 16).toString('base64url'));
  });

  it('validates authorization requests', () => {
    expect(checkAuthorization(params(), confidential)).toMatchObject({ scopes: ['openid', 'read:users'] });
    expect(checkAuthorization(params(), { ...confidential, type: 'public' })).toMatchObject({ error: 'invalid_request' });
    expect(checkAuthorization(params({ codeChallenge: challengeOf('x'.repeat(43)), codeChallengeMethod: 'plain' }), confidential)).toMatchObject({
      error: 'invalid_request',
    });
    expect(checkAuthorization(params({ codeChallenge: challengeOf('x'.repeat(43)) }), confidential)).toMatchObject({ error: 'invalid_request' });
    expect(checkAuthorization(params({ responseType: 'token' }), confidential)).toMatchObject({ error: 'unsupported_response_type' });
    expect(checkAuthorization(params({ scope: 'write:users' }), confidential)).toMatchObject({ error: 'invalid_scope' });
    expect(checkAuthorization(params({ prompt: 'none login' }), confidential)).toMatchObject({ error: 'invalid_request' });
    expect(checkAuthorization(params({ maxAge: '-1' }), confidential)).toMatchObject({ error: 'invalid_request' });
    expect(checkAuthorization(params({ maxAge: '300', prompt: 'login' }), confidential)).toMatchObject({ maxAge: 300 });
  });

  it('adds response parameters to the redirect URI, keeping its own query', () => {
    expect(redirectWith('https://app.example.com/cb?x=1', { code: 'c', state: 's&t', iss: undefined })).toBe('https://app.example.com/cb?x=1&code=c&state=s%26t');
  });
});

describe('how the user authenticated (amr, acr, auth_time)', () => {
  const created = new Date('2025-03-01T10:00:00.900Z');
  const mfaAt = new Date('2025-03-01T10:20:00.000Z');

  it('auth_time is the latest MFA of the session, else its login', () => {
    expect(sessionAuthTime({ created_at: created, mfa_at: null })).toBe(created);
    expect(sessionAuthTime({ created_at: created, mfa_at: mfaAt })).toBe(mfaAt);
  });

  it('claims: amr an array, acr, auth_time in epoch seconds; unknown values left out', () => {
    const session = { amr: ['pwd', 'otp', 'mfa'], acr: 'urn:secsvc:acr:mfa', created_at: created, mfa_at: mfaAt };
    expect(authenticationClaims(authenticationOfSession(session))).toEqual({ amr: ['pwd', 'otp', 'mfa'], acr: 'urn:secsvc:acr:mfa', auth_time: 1740824400 });
    expect(authenticationClaims(authenticationOfSession({ amr: ['pwd'], acr: 'urn:secsvc:acr:1fa', created_at: created, mfa_at: null }))).toEqual({
      amr: ['pwd'],
      acr: 'urn:secsvc:acr:1fa',
      auth_time: 1740823200,
    });
    // A session the application opened: only when.
    expect(authenticationClaims({ amr: [], acr: '', authTime: created })).toEqual({ auth_time: 1740823200 });
    // No user (client_credentials): nothing.
    expect(authenticationClaims({ amr: [], acr: '', authTime: null })).toEqual({});
  });

  it('the claims hold a copy of the amr (a token never shares the row it came from)', () => {
    const amr = ['pwd'];
    const claims = authenticationClaims({ amr, acr: '', authTime: null });
    amr.push('otp');
    expect(claims.amr).toEqual(['pwd']);
  });
});

describe('administrative scopes', () => {
  it('belong to first-party clients only: each named on another client, or the flag when only it changes', () => {
    expect(administrativeScopeErrors(['read:users', 'write:api_keys'], true, true)).toEqual([]);
    expect(administrativeScopeErrors(['read:users'], false, true)).toEqual([]);
    expect(administrativeScopeErrors(['write:clients', 'read:users', 'write:sso'], false, true).map((e) => e.field)).toEqual(['scopes[0]', 'scopes[2]']);
    expect(administrativeScopeErrors(['write:api_keys'], false, false)).toEqual([{ field: 'firstParty', message: expect.stringContaining('must stay true while the client has write:api_keys') }]);
  });
});
