import { decodeCursor, encodeCursor } from './cursor';
import { AppError } from './errors';

const SECRET = 'cursor-test-secret-0123456789abcdef';
const users = { kind: 'users', environment: 'live' };
const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

function expectInvalid(fn: () => unknown): void {
  let thrown: unknown;
  try {
    fn();
  } catch (err) {
    thrown = err;
  }
  expect(thrown).toBeInstanceOf(AppError);
  const err = thrown as AppError;
  expect(err.code).toBe('invalid_request');
  expect(err.httpStatus).toBe(400);
  expect(err.details).toHaveLength(1);
  expect(err.details[0]).toEqual({ field: 'cursor', message: expect.any(String) });
}

describe('cursors', () => {
  it('round-trips the position through encode and decode', () => {
    for (const after of ['user_01j0000000000000000000000', '2024-05-01T10:00:00.123Z|user_01', '', 'ünï"cødé\\,[]']) {
      const cursor = encodeCursor({ ...users, after }, SECRET);
      expect(decodeCursor(cursor, users, SECRET)).toBe(after);
    }
  });

  it('starts with cur_ and is url-safe', () => {
    const cursor = encodeCursor({ ...users, after: 'x/y+z=' }, SECRET);
    expect(cursor.startsWith('cur_')).toBe(true);
    expect(cursor.slice(4)).toMatch(/^[A-Za-z0-9_-]+$/);
  });

  it('never carries the secret', () => {
    const cursor = encodeCursor({ ...users, after: 'abc' }, SECRET);
    expect(Buffer.from(cursor.slice(4), 'base64url').toString('latin1')).not.toContain(SECRET);
  });

  // Every position, every other base64url character. The last character of unpadded base64url carries spare
  // bits when the byte count is not a multiple of 3; a decoder that ignores them accepts several spellings.
  it.each(['a', 'ab', 'abc', '2024-05-01T10:00:00.123Z|user_01'])(
    'rejects a cursor with any one character changed (after=%j)',
    (after) => {
      const cursor = encodeCursor({ ...users, after }, SECRET);
      const accepted: string[] = [];
      for (let i = 0; i < cursor.length; i++) {
        for (const ch of BASE64URL) {
          if (ch === cursor[i]) continue;
          const tampered = cursor.slice(0, i) + ch + cursor.slice(i + 1);
          try {
            decodeCursor(tampered, users, SECRET);
            accepted.push(`position ${i}: ${cursor[i]} -> ${ch}`);
          } catch (err) {
            expect(err).toBeInstanceOf(AppError);
            expect((err as AppError).details[0]?.field).toBe('cursor');
          }
        }
      }
      expect(accepted).toEqual([]);
    },
  );

  it('rejects a truncated cursor', () => {
    const cursor = encodeCursor({ ...users, after: 'user_01j0000000000000000000000' }, SECRET);
    for (const cut of [1, 2, 3, 4, 10, 22, cursor.length - 5]) {
      expectInvalid(() => decodeCursor(cursor.slice(0, cursor.length - cut), users, SECRET));
    }
  });

  it('rejects garbage', () => {
    for (const garbage of ['hello', 'cur_!!!!', 'cur_ abc', 'cur_abc=', 'cur_abc.def', 'CUR_abc', 'cur_AAAA', 'cur_' + 'A'.repeat(60)]) {
      expectInvalid(() => decodeCursor(garbage, users, SECRET));
    }
  });

  it('rejects valid base64url that was not made by encodeCursor', () => {
    expectInvalid(() => decodeCursor('cur_' + Buffer.from('["users","live","x"]' + 'x'.repeat(16)).toString('base64url'), users, SECRET));
  });

  it('rejects an empty body', () => {
    expectInvalid(() => decodeCursor('cur_', users, SECRET));
    expectInvalid(() => decodeCursor('', users, SECRET));
  });

  it('rejects a cursor longer than 512 characters, even a genuine one', () => {
    const cursor = encodeCursor({ ...users, after: 'x'.repeat(600) }, SECRET);
    expect(cursor.length).toBeGreaterThan(512);
    expectInvalid(() => decodeCursor(cursor, users, SECRET));
  });

  it('rejects a cursor made with another secret', () => {
    const cursor = encodeCursor({ ...users, after: 'abc' }, 'another-secret-0123456789abcdefghij');
    expectInvalid(() => decodeCursor(cursor, users, SECRET));
  });

  it('rejects a cursor of another list kind', () => {
    const cursor = encodeCursor({ kind: 'policies', environment: 'live', after: 'abc' }, SECRET);
    expectInvalid(() => decodeCursor(cursor, users, SECRET));
  });

  it('rejects a cursor of another environment', () => {
    const cursor = encodeCursor({ kind: 'users', environment: 'test', after: 'abc' }, SECRET);
    expectInvalid(() => decodeCursor(cursor, users, SECRET));
  });
});
