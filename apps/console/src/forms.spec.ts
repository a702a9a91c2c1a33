import { formatRoles, formatTime, parseJsonText, parseRoles } from './forms';

describe('user form inputs', () => {
  it('reads roles separated by commas, spaces or lines', () => {
    expect(parseRoles(' role_a, role_b\nrole_c  ,,')).toEqual(['role_a', 'role_b', 'role_c']);
    expect(parseRoles('')).toEqual([]);
    expect(formatRoles(['role_a', 'role_b'])).toBe('role_a, role_b');
  });

  it('reads the metadata JSON, naming the parser problem', () => {
    expect(parseJsonText('{"a": [1, null]}')).toEqual({ ok: true, value: { a: [1, null] } });
    expect(parseJsonText('  ')).toEqual({ ok: true, value: {} });
    const bad = parseJsonText('{"a": }');
    expect(bad.ok).toBe(false);
    expect(!bad.ok && bad.message).toMatch(/^is not valid JSON: /);
  });

  it('shows API timestamps in UTC to the minute', () => {
    expect(formatTime('2025-01-31T14:05:59.123Z')).toBe('2025-01-31 14:05 UTC');
    expect(formatTime(null)).toBe('—');
  });
});
