import { AppError } from '@secsvc/shared';
import { parseSearchQuery, SEARCH_LIMITS } from './query';

function refusal(input: unknown): AppError {
  try {
    parseSearchQuery(input);
  } catch (err) {
    if (err instanceof AppError) return err;
    throw err;
  }
  throw new Error(`${JSON.stringify(input)} was accepted`);
}

test('terms, phrases, prefixes, exclusions and fields', () => {
  expect(parseSearchQuery('  Login  "Password Reset"  log*  -logout  user.login ').clauses).toEqual([
    { kind: 'text', negated: false, pattern: { tokens: ['login'], prefix: false } },
    { kind: 'text', negated: false, pattern: { tokens: ['password', 'reset'], prefix: false } },
    { kind: 'text', negated: false, pattern: { tokens: ['log'], prefix: true } },
    { kind: 'text', negated: true, pattern: { tokens: ['logout'], prefix: false } },
    { kind: 'text', negated: false, pattern: { tokens: ['user', 'login'], prefix: false } },
  ]);
  expect(parseSearchQuery('event:login -Event:"user.logout" actor.email:Alice@Example.COM ip:10.0.* -result:failure').clauses).toEqual([
    { kind: 'fieldTokens', negated: false, field: 'event', pattern: { tokens: ['login'], prefix: false } },
    { kind: 'fieldTokens', negated: true, field: 'event', pattern: { tokens: ['user', 'logout'], prefix: false } },
    { kind: 'fieldExact', negated: false, field: 'actor.email', value: 'alice@example.com', prefix: false, tokens: ['alice', 'example', 'com'] },
    { kind: 'fieldExact', negated: false, field: 'ip', value: '10.0.', prefix: true, tokens: ['10', '0'] },
    { kind: 'fieldExact', negated: true, field: 'result', value: 'failure', prefix: false, tokens: ['failure'] },
  ]);
});

test('a prefix keeps only whole tokens for the index; a separator before * ends the term', () => {
  expect(parseSearchQuery('actor.id:user_0*').clauses[0]).toMatchObject({ value: 'user_0', prefix: true, tokens: ['user'] });
  expect(parseSearchQuery('user.log*').clauses[0]).toMatchObject({ pattern: { tokens: ['user', 'log'], prefix: true } });
  expect(parseSearchQuery('user.*').clauses[0]).toMatchObject({ pattern: { tokens: ['user'], prefix: false } });
});

test('a colon after something that is not a field name is part of the term', () => {
  expect(parseSearchQuery('2001:db8::1 10:30').clauses.map((c) => c.kind === 'text' && c.pattern.tokens)).toEqual([
    ['2001', 'db8', '1'],
    ['10', '30'],
  ]);
  expect(parseSearchQuery('"https://example.com/a"').clauses[0]).toMatchObject({ pattern: { tokens: ['https', 'example', 'com', 'a'] } });
});

test('Unicode: folded like ClickHouse lowerUTF8, split only on ASCII punctuation, any Unicode space separates terms', () => {
  expect(parseSearchQuery('ÉCOLE ΟΔΟΣ İstanbul 😀\u00a0עברית').clauses.map((c) => c.kind === 'text' && c.pattern.tokens)).toEqual([
    ['école'],
    ['οδοσ'],
    ['i\u0307stanbul'],
    ['😀'],
    ['עברית'],
  ]);
});

test('hostile but valid input parses into plain tokens', () => {
  const q = parseSearchQuery(`<script>alert('x')</script> "a'b" (a|b)+ \\d+ $1 a.b.c`);
  expect(q.clauses.map((c) => c.kind === 'text' && c.pattern.tokens)).toEqual([
    ['script', 'alert', 'x', 'script'],
    ['a', 'b'],
    ['a', 'b'],
    ['d'],
    ['1'],
    ['a', 'b', 'c'],
  ]);
});

test.each<[unknown, string]>([
  ['', 'is empty'],
  [' \t\n ', 'is empty'],
  ['"abc', 'unbalanced quote: the phrase opened at character 1'],
  ['login "password reset', 'unbalanced quote: the phrase opened at character 7'],
  ['actor.email:', 'no value after "actor.email:"'],
  ['event: login', 'no value after "event:"'],
  ['foo:bar', 'unknown field "foo"'],
  ['https://example.com', 'unknown field "https"'],
  ['-', 'lone "-" at character 1'],
  ['login -', 'lone "-" at character 7'],
  ['- login', 'lone "-"'],
  ['--login', '"--"'],
  ['*', 'lone "*"'],
  ['login *', 'lone "*" at character 7'],
  ['*login', '"*" may only end a term'],
  ['lo*gin', '"*" may only end a term'],
  ['login**', '"*" may only end a term'],
  ['a.*b', '"*" may only end a term'],
  ['"user login"*', 'a phrase cannot end in "*"'],
  ['"user"login', 'needs a space after the closing quote'],
  ['user"login"', 'has a quote inside'],
  ['""', 'the phrase "" has no letters or digits'],
  ['login ...', 'the term "..." has no letters or digits'],
  ['actor.email:"@"', 'the value of actor.email "@" has no letters or digits'],
  ['-login -logout', 'only excludes'],
  ['-event:login', 'only excludes'],
  [42, 'must be a string'],
  [null, 'must be a string'],
])('%j is refused naming query: %s', (input, message) => {
  const err = refusal(input);
  expect(err.code).toBe('invalid_request');
  expect(err.httpStatus).toBe(400);
  expect(err.details).toEqual([{ field: 'query', message: expect.stringContaining(message) }]);
});

test('length and clause limits: the limit is accepted, one more is refused', () => {
  expect(parseSearchQuery('a'.repeat(SEARCH_LIMITS.maxLength)).clauses).toHaveLength(1);
  expect(refusal('a'.repeat(SEARCH_LIMITS.maxLength + 1)).details[0]!.message).toBe('is too long: at most 1000 characters');
  // characters are code points: 1,000 emoji are 2,000 UTF-16 units and still fit
  expect(parseSearchQuery('😀'.repeat(SEARCH_LIMITS.maxLength)).clauses).toHaveLength(1);
  expect(refusal('😀'.repeat(SEARCH_LIMITS.maxLength + 1)).details[0]!.message).toContain('too long');
  const terms = (n: number) => Array.from({ length: n }, (_, i) => `t${i}`).join(' ');
  expect(parseSearchQuery(terms(SEARCH_LIMITS.maxClauses)).clauses).toHaveLength(SEARCH_LIMITS.maxClauses);
  expect(refusal(terms(SEARCH_LIMITS.maxClauses + 1)).details[0]!.message).toBe('has too many terms: at most 32');
});

test('10 kB hostile queries are refused cleanly, without echoing them', () => {
  for (const q of ['<script>'.repeat(1250), '"'.repeat(10_000), `${'a '.repeat(5000)}`, `x${'*'.repeat(9999)}`, '\u202e'.repeat(10_000)]) {
    const err = refusal(q);
    expect(err.details).toEqual([{ field: 'query', message: 'is too long: at most 1000 characters' }]);
  }
});

test('error messages quote at most 40 characters of the query, on one line', () => {
  expect(refusal('"\n\t\n"').details[0]!.message).toBe('the phrase " " has no letters or digits to search for');
  const long = refusal(`${'w'.repeat(60)}"z`).details[0]!.message;
  expect(long).toContain(`"${'w'.repeat(40)}…"`);
  expect(long).not.toContain('w'.repeat(41));
  expect(refusal('a\nb:c').details[0]!.message).toContain('unknown field "b"');
});
