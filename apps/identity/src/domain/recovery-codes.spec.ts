import { createHmac } from 'node:crypto';
import { generateRecoveryCodes, hashRecoveryCode, normalizeRecoveryCode, RECOVERY_CODE_ALPHABET, RECOVERY_CODE_COUNT, RECOVERY_CODE_LENGTH } from './recovery-codes';
import { deriveKey } from './sealing';

const WELL_FORMED = /^[a-hjkmnp-z2-9]{5}-[a-hjkmnp-z2-9]{5}$/;

describe('recovery codes', () => {
  it('use 31 unambiguous lowercase characters: no 0, o, 1, l or i', () => {
    expect(RECOVERY_CODE_ALPHABET).toHaveLength(31);
    expect(new Set(RECOVERY_CODE_ALPHABET).size).toBe(31);
    expect(RECOVERY_CODE_ALPHABET).toMatch(/^[a-z2-9]+$/);
    for (const ch of '0o1li') expect(RECOVERY_CODE_ALPHABET).not.toContain(ch);
    // 10 characters of 31 symbols: 49.5 bits each
    expect(RECOVERY_CODE_LENGTH * Math.log2(RECOVERY_CODE_ALPHABET.length)).toBeCloseTo(49.54, 2);
  });

  it('come ten at a time, distinct, each xxxxx-xxxxx', () => {
    const codes = generateRecoveryCodes();
    expect(RECOVERY_CODE_COUNT).toBe(10);
    expect(codes).toHaveLength(10);
    expect(new Set(codes).size).toBe(10);
    for (const code of codes) expect(code).toMatch(WELL_FORMED);
    expect(generateRecoveryCodes(3)).toHaveLength(3);
    expect(generateRecoveryCodes(0)).toEqual([]);
    expect(() => generateRecoveryCodes(-1)).toThrow(RangeError);
  });

  it('differ between sets and draw on the whole alphabet', () => {
    const many = Array.from({ length: 100 }, () => generateRecoveryCodes()).flat();
    expect(new Set(many).size).toBe(1000);
    const used = new Set(many.join('').replace(/-/g, ''));
    expect([...used].sort().join('')).toBe([...RECOVERY_CODE_ALPHABET].sort().join(''));
  });

  it('normalize to lowercase without spaces or hyphens', () => {
    const [code] = generateRecoveryCodes(1);
    const plain = code.replace('-', '');
    expect(normalizeRecoveryCode(code)).toBe(plain);
    expect(normalizeRecoveryCode(code.toUpperCase())).toBe(plain);
    expect(normalizeRecoveryCode(` ${plain.slice(0, 3)} -${plain.slice(3, 7)}- ${plain.slice(7)} `)).toBe(plain);
    expect(normalizeRecoveryCode('ABCDE-FGHJK')).toBe('abcdefghjk');
  });

  it('normalize to nothing when too long or with characters outside the alphabet', () => {
    expect(normalizeRecoveryCode('a'.repeat(64))).toBe('a'.repeat(64));
    expect(normalizeRecoveryCode('a'.repeat(65))).toBe('');
    expect(normalizeRecoveryCode(' '.repeat(65))).toBe('');
    for (const bad of ['abcde-fghj0', 'abcde-fghjo', 'abcde-fghj1', 'abcde-fghjl', 'abcde-fghji', 'abcde_fghjk', 'abcde\tfghjk', 'abcdé-fghjk', 'abcde-fghj\u212a', "a' OR 1=1"]) {
      expect(normalizeRecoveryCode(bad)).toBe('');
    }
    expect(normalizeRecoveryCode(undefined as unknown as string)).toBe('');
  });

  it('hash consistently, over the normalized code, with an HMAC-SHA-256 under the mfa-recovery-code key', () => {
    const [code] = generateRecoveryCodes(1);
    const hash = hashRecoveryCode(code, 'server-secret');
    expect(hash).toHaveLength(32);
    expect(hashRecoveryCode(code, 'server-secret').equals(hash)).toBe(true);
    expect(hashRecoveryCode(` ${code.toUpperCase()} `, 'server-secret').equals(hash)).toBe(true);
    expect(hashRecoveryCode(normalizeRecoveryCode(code), 'server-secret').equals(hash)).toBe(true);
    const expected = createHmac('sha256', deriveKey('server-secret', 'mfa-recovery-code')).update(normalizeRecoveryCode(code)).digest();
    expect(hash.equals(expected)).toBe(true);
  });

  it('hash differently under different secrets, and different codes differently', () => {
    const [a, b] = generateRecoveryCodes(2);
    expect(hashRecoveryCode(a, 'secret-one').equals(hashRecoveryCode(a, 'secret-two'))).toBe(false);
    expect(hashRecoveryCode(a, 'secret-one').equals(hashRecoveryCode(b, 'secret-one'))).toBe(false);
    // not the key of another purpose
    const otherPurpose = createHmac('sha256', deriveKey('secret-one', 'mfa-login-token')).update(normalizeRecoveryCode(a)).digest();
    expect(hashRecoveryCode(a, 'secret-one').equals(otherPurpose)).toBe(false);
  });
});
