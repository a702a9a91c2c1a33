import { z } from 'zod';
import { AppError } from './errors';
import { durationSchema, emailSchema, fieldErrors, integerRangePattern, metadataSchema, nameSchema, parseOrThrow, rolesSchema, userLimits } from './validation';

function messages(schema: z.ZodType, value: unknown): string[] {
  const result = schema.safeParse(value);
  return result.success ? [] : result.error.issues.map((i) => i.message);
}

function nested(levels: number): Record<string, unknown> {
  let value: Record<string, unknown> = { leaf: 1 };
  for (let i = 1; i < levels; i++) value = { next: value };
  return value;
}

describe('emailSchema', () => {
  it('accepts a valid address', () => {
    expect(emailSchema.parse('ada@example.com')).toBe('ada@example.com');
  });

  it.each(['nope', 'a@', '@b.co', 'a b@c.co', 'a@b', ''])('rejects %j with "invalid email format"', (value) => {
    expect(messages(emailSchema, value)).toEqual(['invalid email format']);
  });

  it('rejects an address longer than 254 characters', () => {
    const long = `${'a'.repeat(64)}@${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(63)}.co`;
    expect(long.length).toBeGreaterThan(userLimits.emailMaxLength);
    expect(emailSchema.safeParse(long).success).toBe(false);
  });

  it('says when it is missing or not a string', () => {
    expect(messages(emailSchema, undefined)).toEqual(['is required']);
    expect(messages(emailSchema, 42)).toEqual(['must be a string']);
  });
});

describe('rolesSchema', () => {
  it('accepts roles matching role_<name>', () => {
    expect(rolesSchema.parse(['role_admin', 'role_read-only', 'role_a_1'])).toEqual(['role_admin', 'role_read-only', 'role_a_1']);
    expect(rolesSchema.parse([])).toEqual([]);
  });

  it.each(['admin', 'role_', 'role_Admin', 'ROLE_admin', 'role_-x', 'role_a b', `role_${'a'.repeat(64)}`])('rejects the role %j', (role) => {
    expect(rolesSchema.safeParse([role]).success).toBe(false);
  });

  it('rejects duplicates', () => {
    expect(messages(rolesSchema, ['role_a', 'role_b', 'role_a'])).toEqual(['must not contain duplicates']);
  });

  it('accepts 50 roles and rejects 51', () => {
    const roles = (n: number) => Array.from({ length: n }, (_, i) => `role_r${i}`);
    expect(rolesSchema.safeParse(roles(50)).success).toBe(true);
    expect(messages(rolesSchema, roles(51))).toEqual(['at most 50 roles']);
  });

  it('rejects something that is not an array of strings', () => {
    expect(rolesSchema.safeParse('role_admin').success).toBe(false);
    expect(rolesSchema.safeParse([1]).success).toBe(false);
  });
});

describe('nameSchema', () => {
  it('accepts a name up to 200 characters', () => {
    expect(nameSchema.parse('Ada Lovelace')).toBe('Ada Lovelace');
    expect(nameSchema.safeParse('x'.repeat(200)).success).toBe(true);
  });

  it.each(['', ' ', '   \t\n'])('rejects the empty or blank name %j', (value) => {
    expect(messages(nameSchema, value)).toEqual(['must not be empty']);
  });

  it('rejects a name longer than 200 characters', () => {
    expect(messages(nameSchema, 'x'.repeat(201))).toContain('must be at most 200 characters');
  });
});

describe('metadataSchema', () => {
  it.each([['a string'], [42], [true], [null], [[1, 2]], [[]], [undefined]])('rejects %j as not an object', (value) => {
    expect(messages(metadataSchema, value)).toEqual(['must be an object']);
  });

  it('accepts an empty object', () => {
    expect(metadataSchema.parse({})).toEqual({});
  });

  it('accepts 16 KiB of JSON and rejects one byte more', () => {
    const overhead = Buffer.byteLength(JSON.stringify({ k: '' }));
    const exact = { k: 'x'.repeat(userLimits.metadataMaxBytes - overhead) };
    expect(Buffer.byteLength(JSON.stringify(exact))).toBe(16 * 1024);
    expect(metadataSchema.safeParse(exact).success).toBe(true);
    const over = { k: 'x'.repeat(userLimits.metadataMaxBytes - overhead + 1) };
    expect(messages(metadataSchema, over)).toEqual(['must be at most 16384 bytes as JSON']);
  });

  it('counts bytes, not characters', () => {
    const overhead = Buffer.byteLength(JSON.stringify({ k: '' }));
    const chars = Math.floor((userLimits.metadataMaxBytes - overhead) / 2) + 1;
    const twoByteChars = { k: 'é'.repeat(chars) };
    expect(JSON.stringify(twoByteChars).length).toBeLessThan(userLimits.metadataMaxBytes);
    expect(metadataSchema.safeParse(twoByteChars).success).toBe(false);
  });

  it('accepts 10 levels of nesting and rejects 11', () => {
    expect(metadataSchema.safeParse(nested(10)).success).toBe(true);
    expect(messages(metadataSchema, nested(11))).toEqual(['must be nested at most 10 levels']);
  });

  it('counts arrays as levels', () => {
    let value: unknown = 1;
    for (let i = 0; i < 10; i++) value = [value];
    expect(metadataSchema.safeParse({ a: value }).success).toBe(false);
  });

  it('keeps nested values exactly', () => {
    const input = {
      s: 'text',
      n: 1.5,
      big: 9007199254740991,
      neg: -0.25,
      t: true,
      f: false,
      nil: null,
      list: [1, 'two', null, { three: [3] }],
      obj: { a: { b: { c: 'deep' } }, empty: {} },
      'key with spaces': 'ok',
    };
    const result = metadataSchema.parse(JSON.parse(JSON.stringify(input)));
    expect(result).toEqual(input);
    expect(JSON.stringify(result)).toBe(JSON.stringify(input));
  });

  it('never silently drops a key (keeps it or rejects the object)', () => {
    const input = JSON.parse('{"__proto__": {"admin": true}, "a": 1}') as Record<string, unknown>;
    expect(Object.keys(input)).toEqual(['__proto__', 'a']);
    const result = metadataSchema.safeParse(input);
    if (result.success) {
      expect(Object.keys(result.data)).toEqual(['__proto__', 'a']);
      expect(Object.getPrototypeOf(result.data)).not.toEqual({ admin: true });
    }
    expect(({} as Record<string, unknown>).admin).toBeUndefined();
  });
});

describe('fieldErrors', () => {
  const body = z.strictObject({
    email: emailSchema,
    roles: rolesSchema,
    a: z.strictObject({ b: z.string({ error: 'must be a string' }) }),
  });

  it('names array items with brackets and nested fields with dots', () => {
    const result = body.safeParse({ email: 'ada@example.com', roles: ['role_a', 'role_b', 'admin'], a: { b: 1 } });
    expect(result.success).toBe(false);
    const errors = fieldErrors(result.error!);
    expect(errors.map((e) => e.field)).toEqual(['roles[2]', 'a.b']);
    expect(errors[1]).toEqual({ field: 'a.b', message: 'must be a string' });
  });

  it('reports each unknown key as its own field', () => {
    const result = body.safeParse({ email: 'ada@example.com', roles: [], a: { b: 'x', c: 1 }, x: 1, y: 2 });
    expect(result.success).toBe(false);
    const errors = fieldErrors(result.error!);
    expect(errors).toEqual(
      expect.arrayContaining([
        { field: 'x', message: 'unknown field' },
        { field: 'y', message: 'unknown field' },
        { field: 'a.c', message: 'unknown field' },
      ]),
    );
    expect(errors).toHaveLength(3);
  });

  it('names every faulty field at once', () => {
    const result = body.safeParse({ email: 'nope', roles: ['admin', 'role_ok', 'bad'], a: {}, extra: true });
    const fields = fieldErrors(result.error!).map((e) => e.field);
    expect(fields.sort()).toEqual(['a.b', 'email', 'extra', 'roles[0]', 'roles[2]'].sort());
    expect(fieldErrors(result.error!).find((e) => e.field === 'email')?.message).toBe('invalid email format');
  });

  it('prefixes paths when asked', () => {
    const result = body.safeParse({ email: 'ada@example.com', roles: ['x'], a: { b: 'ok' }, z: 0 });
    const fields = fieldErrors(result.error!, 'user').map((e) => e.field);
    expect(fields.sort()).toEqual(['user.roles[0]', 'user.z'].sort());
  });

  it('names a problem of the whole body (body)', () => {
    const result = body.safeParse('not an object');
    expect(fieldErrors(result.error!)).toEqual([{ field: '(body)', message: expect.any(String) }]);
  });

  it('reports a refinement of an array on the array itself', () => {
    const result = body.safeParse({ email: 'ada@example.com', roles: ['role_a', 'role_a'], a: { b: 'x' } });
    expect(fieldErrors(result.error!)).toEqual([{ field: 'roles', message: 'must not contain duplicates' }]);
  });
});

describe('parseOrThrow', () => {
  it('returns the parsed value', () => {
    expect(parseOrThrow(nameSchema, 'Ada')).toBe('Ada');
  });

  it('throws invalid_request with the field details', () => {
    try {
      parseOrThrow(z.object({ email: emailSchema }), { email: 'nope' });
      throw new Error('expected a throw');
    } catch (err) {
      expect(err).toBeInstanceOf(AppError);
      expect((err as AppError).code).toBe('invalid_request');
      expect((err as AppError).details).toEqual([{ field: 'email', message: 'invalid email format' }]);
    }
  });
});

describe('integerRangePattern', () => {
  const matches = (min: number, max: number) => {
    const re = new RegExp(`^(?:${integerRangePattern(min, max)})$`);
    return (n: number | string) => re.test(String(n));
  };

  it.each([
    [0, 0],
    [0, 9],
    [1, 30],
    [60, 2_592_000],
    [1, 43_200],
    [1, 720],
    [7, 7],
    [95, 105],
    [0, 604_800],
    [123, 98_765],
  ])('matches exactly %i..%i', (min, max) => {
    const ok = matches(min, max);
    const top = Math.min(max + 1000, 3_000_000);
    for (let n = 0; n <= top; n += n < 20_000 ? 1 : 97) expect([n, ok(n)]).toEqual([n, n >= min && n <= max]);
    expect(ok(max)).toBe(true);
    expect(ok(max + 1)).toBe(false);
  });

  it('refuses leading zeros, signs and other text', () => {
    const ok = matches(0, 100);
    for (const s of ['00', '01', '007', '-1', '+1', '1.0', '1e1', ' 1', '', 'x']) expect([s, ok(s)]).toEqual([s, false]);
  });
});

describe('durationSchema', () => {
  const sessions = durationSchema(60, 30 * 86_400, '1m to 30d');
  it('accepts the bounds in every unit and parses to seconds', () => {
    expect(['60s', '1m', '1h', '24h', '30d', '720h', '43200m', '2592000s'].map((v) => sessions.parse(v))).toEqual([60, 60, 3600, 86_400, 2_592_000, 2_592_000, 2_592_000, 2_592_000]);
  });
  it('refuses values out of range, leading zeros and other units', () => {
    for (const v of ['59s', '0m', '0d', '31d', '721h', '43201m', '2592001s', '060s', '01d', '1w', '1.5h', 'h', '', '24 h']) {
      expect([v, sessions.safeParse(v).success]).toEqual([v, false]);
    }
  });
  it('puts the bounds in its pattern (the OpenAPI document states them)', () => {
    const js = z.toJSONSchema(sessions, { io: 'input' }) as { pattern: string };
    const re = new RegExp(js.pattern);
    expect(['60s', '1m', '30d'].every((v) => re.test(v))).toBe(true);
    expect(['59s', '31d', '0m'].some((v) => re.test(v))).toBe(false);
  });
});
