import { graceLabel, keyStatus, readExpiry, readRateLimit } from './api-keys';

describe('API key pages: pure parts', () => {
  const now = Date.parse('2030-06-01T12:00:00Z');

  it('tells a key active, expired or revoked (revoked first)', () => {
    expect(keyStatus({ revokedAt: null, expiresAt: null }, now)).toBe('active');
    expect(keyStatus({ revokedAt: null, expiresAt: '2030-06-01T12:00:01Z' }, now)).toBe('active');
    expect(keyStatus({ revokedAt: null, expiresAt: '2030-06-01T12:00:00Z' }, now)).toBe('expired');
    expect(keyStatus({ revokedAt: '2030-05-01T00:00:00Z', expiresAt: '2030-01-01T00:00:00Z' }, now)).toBe('revoked');
  });

  it('reads the rate limit as a whole number, empty for the plan default', () => {
    expect(readRateLimit('')).toEqual({ ok: true, value: undefined });
    expect(readRateLimit(' 2500 ')).toEqual({ ok: true, value: 2500 });
    for (const bad of ['1.5', '-3', '10/min', 'x']) expect([bad, readRateLimit(bad).ok]).toEqual([bad, false]);
  });

  it('reads the expiry as local time and sends it as ISO 8601 UTC', () => {
    expect(readExpiry('')).toEqual({ ok: true, value: undefined });
    expect(readExpiry('2031-01-31T14:05')).toEqual({ ok: true, value: new Date(2031, 0, 31, 14, 5).toISOString() });
    expect(readExpiry('2031-01-31T14:05:30')).toEqual({ ok: true, value: new Date(2031, 0, 31, 14, 5, 30).toISOString() });
    const bad = readExpiry('next tuesday');
    expect(bad).toEqual({ ok: false, message: 'must be a date and time' });
    expect(readExpiry('2031-13-45T99:00').ok).toBe(false);
  });

  it('names the grace periods', () => {
    expect(graceLabel('24h')).toBe('24 hours');
    expect(graceLabel('0s')).toMatch(/stops working now/);
    expect(graceLabel('3h')).toBe('3h');
  });
});
