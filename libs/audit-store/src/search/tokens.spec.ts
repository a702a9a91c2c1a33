import { foldCase, SEARCH_TEXT_COLUMNS, SEARCH_TEXT_SQL, tokenize, tokenSpans } from './tokens';

test('ASCII letters, digits and every non-ASCII character make tokens; all other ASCII characters split them', () => {
  expect(tokenize('user.password_reset.failed')).toEqual(['user', 'password', 'reset', 'failed']);
  expect(tokenize('alice@example.com')).toEqual(['alice', 'example', 'com']);
  expect(tokenize('  Mozilla/5.0 (X11; Linux x86_64)  ')).toEqual(['Mozilla', '5', '0', 'X11', 'Linux', 'x86', '64']);
  expect(tokenize('a~b\x00c\x7fd{e}f|g')).toEqual(['a', 'b', 'c', 'd', 'e', 'f', 'g']);
  expect(tokenize('café 😀emoji שלום\u00a0עולם')).toEqual(['café', '😀emoji', 'שלום\u00a0עולם']);
  expect(tokenize('')).toEqual([]);
  expect(tokenize('...@@@')).toEqual([]);
});

test('token spans are UTF-16 offsets that never cut a surrogate pair', () => {
  const text = '<b>😀x</b> ok';
  const spans = tokenSpans(text);
  expect(spans).toEqual([
    { token: 'b', start: 1, end: 2 },
    { token: '😀x', start: 3, end: 6 },
    { token: 'b', start: 8, end: 9 },
    { token: 'ok', start: 11, end: 13 },
  ]);
  for (const s of spans) expect(text.slice(s.start, s.end)).toBe(s.token);
});

test('folding is Unicode lower case with one sigma, so a word folds the same alone or in a text', () => {
  expect(foldCase('ÉCOLE Straße İ')).toBe('école straße i\u0307');
  expect(foldCase('ΟΔΟΣ')).toBe('οδοσ');
  expect(foldCase('ΟΔΟΣ.Χ')).toBe('οδοσ.χ');
  expect(tokenize(foldCase('ΟΔΟΣ.Χ'))).toEqual(tokenize('ΟΔΟΣ.Χ').map(foldCase));
});

test('search_text is every searchable column, joined by spaces and folded', () => {
  expect(SEARCH_TEXT_SQL).toBe(`replaceAll(lowerUTF8(concat_ws(' ', ${SEARCH_TEXT_COLUMNS.join(', ')})), 'ς', 'σ')`);
  expect(SEARCH_TEXT_COLUMNS).toEqual(['event', 'actor_id', 'actor_email', 'target_id', 'target_type', 'result', 'ip', 'country', 'city', 'user_agent']);
});
