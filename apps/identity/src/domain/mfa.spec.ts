import { ACR_MFA, authenticationOf, factorNameProblem, hashMfaToken, looksLikeMfaToken, mfaRequiredOf, PASSWORD_ONLY } from './mfa';

describe('MFA rules', () => {
  it('records the methods of each proof on top of the password, with mfa and the MFA acr', () => {
    expect(authenticationOf(PASSWORD_ONLY.amr, 'totp')).toEqual({ amr: ['pwd', 'otp', 'mfa'], acr: ACR_MFA });
    expect(authenticationOf(['pwd'], 'recovery_code')).toEqual({ amr: ['pwd', 'otp', 'mfa'], acr: ACR_MFA });
    expect(authenticationOf(['pwd'], 'passkey')).toEqual({ amr: ['pwd', 'hwk', 'user', 'mfa'], acr: ACR_MFA });
    // A passwordless passkey login, and a step-up that adds a method once (mfa stays last, no duplicates).
    expect(authenticationOf([], 'passkey').amr).toEqual(['hwk', 'user', 'mfa']);
    expect(authenticationOf(['pwd', 'otp', 'mfa'], 'totp').amr).toEqual(['pwd', 'otp', 'mfa']);
    expect(authenticationOf(['pwd', 'otp', 'mfa'], 'passkey').amr).toEqual(['pwd', 'otp', 'hwk', 'user', 'mfa']);
  });

  it('requires MFA of everyone, of holders of the listed roles, or of nobody', () => {
    expect(mfaRequiredOf({ required: 'off', roles: [] }, ['role_admin'])).toBe(false);
    expect(mfaRequiredOf({ required: 'all', roles: [] }, [])).toBe(true);
    expect(mfaRequiredOf({ required: 'roles', roles: ['role_admin'] }, ['role_dev', 'role_admin'])).toBe(true);
    expect(mfaRequiredOf({ required: 'roles', roles: ['role_admin'] }, ['role_dev'])).toBe(false);
  });

  it('stores login tokens as keyed hashes that differ by secret and recognises only well-formed tokens', () => {
    const token = `mft_${'a'.repeat(43)}`;
    expect(looksLikeMfaToken(token)).toBe(true);
    for (const bad of ['', 'mft_short', `sst_${'a'.repeat(43)}`, `${token}x`, `mft_${'!'.repeat(43)}`]) expect(looksLikeMfaToken(bad)).toBe(false);
    expect(hashMfaToken(token, 's'.repeat(32))).toEqual(hashMfaToken(token, 's'.repeat(32)));
    expect(hashMfaToken(token, 's'.repeat(32))).not.toEqual(hashMfaToken(token, 't'.repeat(32)));
  });

  it('names what is wrong with a factor name', () => {
    expect(factorNameProblem('YubiKey 5')).toBeUndefined();
    expect(factorNameProblem('')).toBe('must not be blank');
    expect(factorNameProblem('   ')).toBe('must not be blank');
    expect(factorNameProblem('x'.repeat(65))).toBe('must be at most 64 characters');
    expect(factorNameProblem('a\nb')).toBe('must not contain control characters');
  });
});
