import { signDownloadToken, verifyDownloadToken } from './export-token';

const SECRET = 'test-secret-test-secret-test-secret-0123';
const grant = { exportId: 'exp_01jd00000000000000000000aa', format: 'csv', environment: 'live' };
const expiresAt = new Date('2026-11-01T13:00:00.000Z');
const before = expiresAt.getTime() - 1;

test('a token verifies for its export, format and environment until it expires', () => {
  const token = signDownloadToken({ ...grant, expiresAt }, SECRET);
  expect(token).toMatch(/^[0-9a-z]+\.[A-Za-z0-9_-]{43}$/);
  expect(signDownloadToken({ ...grant, expiresAt }, SECRET)).toBe(token);
  expect(verifyDownloadToken(token, grant, SECRET, before)).toEqual({ ok: true, expiresAt });
  expect(verifyDownloadToken(token, grant, SECRET, expiresAt.getTime())).toEqual({ ok: false, reason: 'expired' });
});

test('a token is bound: another export, format, environment or secret makes it invalid', () => {
  const token = signDownloadToken({ ...grant, expiresAt }, SECRET);
  expect(verifyDownloadToken(token, { ...grant, exportId: 'exp_01jd00000000000000000000ab' }, SECRET, before).ok).toBe(false);
  expect(verifyDownloadToken(token, { ...grant, format: 'json' }, SECRET, before)).toEqual({ ok: false, reason: 'invalid' });
  expect(verifyDownloadToken(token, { ...grant, environment: 'test' }, SECRET, before)).toEqual({ ok: false, reason: 'invalid' });
  expect(verifyDownloadToken(token, grant, SECRET.replace('0', '1'), before)).toEqual({ ok: false, reason: 'invalid' });
});

test('every altered character, a moved expiry and malformed tokens are invalid (never expired)', () => {
  const token = signDownloadToken({ ...grant, expiresAt }, SECRET);
  for (let i = 0; i < token.length; i++) {
    if (token[i] === '.') continue;
    const altered = token.slice(0, i) + (token[i] === 'a' ? 'b' : 'a') + token.slice(i + 1);
    expect(verifyDownloadToken(altered, grant, SECRET, before)).toEqual({ ok: false, reason: 'invalid' });
  }
  const later = (expiresAt.getTime() + 3_600_000).toString(36) + token.slice(token.indexOf('.'));
  expect(verifyDownloadToken(later, grant, SECRET, before)).toEqual({ ok: false, reason: 'invalid' });
  for (const bad of ['', '.', 'abc', token + 'x', token.replace('.', ''), ' ' + token, '0' + token]) {
    expect(verifyDownloadToken(bad, grant, SECRET, before)).toEqual({ ok: false, reason: 'invalid' });
  }
});
