import { compileSearchQuery } from './compile';
import { parseSearchQuery } from './query';

const compile = (q: string, prefix?: string) => compileSearchQuery(parseSearchQuery(q), prefix ? { paramPrefix: prefix } : {});
const fold = (column: string) => `replaceAll(lowerUTF8(${column}), 'ς', 'σ')`;
const SEP = '[\\x00-\\x2f\\x3a-\\x40\\x5b-\\x60\\x7b-\\x7f]';

test('a term is hasToken, a phrase (or a term with punctuation) is hasPhrase, both answered by the text index', () => {
  expect(compile('Login "password reset" alice@example.com')).toEqual({
    where: '(hasToken(search_text, {sq0:String})) AND (hasPhrase(search_text, {sq1:String})) AND (hasPhrase(search_text, {sq2:String}))',
    params: { sq0: 'login', sq1: 'password reset', sq2: 'alice example com' },
  });
});

test('a prefix is a regex on token boundaries; the whole tokens before it narrow through the index', () => {
  expect(compile('log*')).toEqual({
    where: '(match(search_text, {sq0:String}))',
    params: { sq0: `(?:^|${SEP})log` },
  });
  expect(compile('user.password_re*')).toEqual({
    where: '(hasPhrase(search_text, {sq0:String}) AND match(search_text, {sq1:String}))',
    params: { sq0: 'user password', sq1: `(?:^|${SEP})user${SEP}+password${SEP}+re` },
  });
});

test('field:value: event by tokens on the event column, other fields whole and folded, both narrowed by the index', () => {
  expect(compile('event:login actor.email:Alice@Example.com ip:10.0.*')).toEqual({
    where:
      `(hasToken(search_text, {sq0:String}) AND hasToken(${fold('event')}, {sq1:String}))` +
      ` AND (hasPhrase(search_text, {sq2:String}) AND ${fold('actor_email')} = {sq3:String})` +
      ` AND (hasPhrase(search_text, {sq4:String}) AND startsWith(${fold('ip')}, {sq5:String}))`,
    params: { sq0: 'login', sq1: 'login', sq2: 'alice example com', sq3: 'alice@example.com', sq4: '10 0', sq5: '10.0.' },
  });
  // a prefix with no whole token has nothing for the index
  expect(compile('login actor.id:u*').where).toBe(`(hasToken(search_text, {sq0:String})) AND (startsWith(${fold('actor_id')}, {sq1:String}))`);
});

test('an excluded clause is NOT of its exact condition alone', () => {
  expect(compile('login -logout -log* -event:"user.logout" -result:failure -ip:10.*')).toEqual({
    where:
      '(hasToken(search_text, {sq0:String})) AND NOT (hasToken(search_text, {sq1:String})) AND NOT (match(search_text, {sq2:String}))' +
      ` AND NOT (hasPhrase(${fold('event')}, {sq3:String})) AND NOT (${fold('result')} = {sq4:String})` +
      ` AND NOT (startsWith(${fold('ip')}, {sq5:String}))`,
    params: { sq0: 'login', sq1: 'logout', sq2: `(?:^|${SEP})log`, sq3: 'user logout', sq4: 'failure', sq5: '10.' },
  });
});

test('parameter names take the given prefix; a prefix that is not an identifier is a programming error', () => {
  expect(compile('login', 'search_')).toEqual({ where: '(hasToken(search_text, {search_0:String}))', params: { search_0: 'login' }, indexToken: 'login' });
  expect(() => compile('login', 'a}b')).toThrow('invalid parameter prefix');
});

test('query text never reaches the SQL, whatever it holds', () => {
  const hostile = [
    `"'); DROP TABLE audit_logs; --"`,
    `actor.email:x'OR'1'='1`,
    `{env:String}* \\x00 ${'\u202e'}evil`,
    `ip:1%_%* event:"a'b" -country:'--x`,
  ].join(' ');
  const { where, params } = compile(hostile);
  expect(where).toMatch(/^[\w\s(){}:,'=ςσ]*$/);
  expect(where).not.toMatch(/drop|evil|env|%|--/i);
  expect(Object.values(params).join(' ')).toContain('drop');
});

test('only a query of one whole term carries its token for counting from the text index', () => {
  expect(compile('Login').indexToken).toBe('login');
  for (const q of ['login*', 'alice -login', 'login failure', '"user login"', 'user.login', 'event:login', 'result:success']) expect(compile(q).indexToken).toBeUndefined();
});
