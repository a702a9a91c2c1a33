import { escapeHtml, highlight, type HighlightSource } from './highlight';
import { parseSearchQuery } from './query';
import { foldCase, tokenize } from './tokens';
import { prng } from '../../test/support/prng';

const hl = (source: HighlightSource, q: string) => highlight(source, parseSearchQuery(q));

const ENTRY: HighlightSource = {
  event: 'user.login',
  'actor.email': 'Alice@Example.com',
  'actor.id': 'user_01',
  'target.id': 'ses_01',
  result: 'success',
  ip: '10.0.0.7',
  country: 'GB',
  city: 'London',
  userAgent: 'Mozilla/5.0 Firefox/120.0',
};

test('terms, phrases and prefixes are wrapped in every field they match; untouched fields are left out', () => {
  expect(hl(ENTRY, 'login')).toEqual({ event: 'user.<em>login</em>' });
  expect(hl(ENTRY, 'USER')).toEqual({ event: '<em>user</em>.login', 'actor.id': '<em>user</em>_01' });
  expect(hl(ENTRY, '"user login"')).toEqual({ event: '<em>user.login</em>' });
  expect(hl(ENTRY, 'fire*')).toEqual({ userAgent: 'Mozilla/5.0 <em>Firefox</em>/120.0' });
  expect(hl(ENTRY, 'example')).toEqual({ 'actor.email': 'Alice@<em>Example</em>.com' });
  expect(hl(ENTRY, '0')).toEqual({ ip: '10.<em>0</em>.<em>0</em>.7', userAgent: 'Mozilla/5.<em>0</em> Firefox/120.<em>0</em>' });
  expect(hl(ENTRY, 'nothing')).toEqual({});
});

test('field:value highlights only its field: event by tokens, other fields as a whole', () => {
  expect(hl({ ...ENTRY, userAgent: 'login-bot' }, 'event:login')).toEqual({ event: 'user.<em>login</em>' });
  expect(hl(ENTRY, 'actor.email:alice@example.COM')).toEqual({ 'actor.email': '<em>Alice@Example.com</em>' });
  expect(hl(ENTRY, 'ip:10.0.*')).toEqual({ ip: '<em>10.0.0.7</em>' });
  expect(hl(ENTRY, 'ip:10.1.*')).toEqual({});
  expect(hl(ENTRY, 'country:gb')).toEqual({ country: '<em>GB</em>' });
  expect(hl({ ...ENTRY, city: 'gb' }, 'country:gb')).toEqual({ country: '<em>GB</em>' });
});

test('excluded terms are never highlighted', () => {
  expect(hl(ENTRY, 'login -user -fire* -"user login" -actor.email:alice@example.com')).toEqual({ event: 'user.<em>login</em>' });
});

test('overlapping and nested matches become one <em>', () => {
  expect(hl(ENTRY, 'user "user login" log* login')).toEqual({ event: '<em>user.login</em>', 'actor.id': '<em>user</em>_01' });
  expect(hl({ event: 'a.b.c.d' }, '"a b c" "b c d" c')).toEqual({ event: '<em>a.b.c.d</em>' });
  expect(hl({ event: 'a.a.a' }, '"a a"')).toEqual({ event: '<em>a.a.a</em>' });
});

test('stored markup is escaped, matched or not, and never escaped twice', () => {
  const ua = `<script>alert("x")</script> Tom's &amp; <img src=x onerror=alert(1)>`;
  expect(hl({ userAgent: ua }, 'alert')).toEqual({
    userAgent: '&lt;script&gt;<em>alert</em>(&quot;x&quot;)&lt;/script&gt; Tom&#39;s &amp;amp; &lt;img src=x onerror=<em>alert</em>(1)&gt;',
  });
  expect(hl({ userAgent: ua }, 'script')).toEqual({
    userAgent: '&lt;<em>script</em>&gt;alert(&quot;x&quot;)&lt;/<em>script</em>&gt; Tom&#39;s &amp;amp; &lt;img src=x onerror=alert(1)&gt;',
  });
  expect(hl({ userAgent: ua }, 'amp')).toEqual({
    userAgent: '&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; Tom&#39;s &amp;<em>amp</em>; &lt;img src=x onerror=alert(1)&gt;',
  });
  expect(hl({ userAgent: '<em>x</em>' }, 'x')).toEqual({ userAgent: '&lt;em&gt;<em>x</em>&lt;/em&gt;' });
  expect(hl({ 'actor.email': `o'neil@x.io` }, `actor.email:O'Neil@x.io`)).toEqual({ 'actor.email': '<em>o&#39;neil@x.io</em>' });
});

test('hostile queries: markup and regex metacharacters are only separators', () => {
  expect(hl({ userAgent: '<script>alert(1)</script>' }, '"<script>alert(1)</script>"')).toEqual({
    userAgent: '&lt;<em>script&gt;alert(1)&lt;/script</em>&gt;',
  });
  expect(hl({ event: 'a.b', city: 'a+b' }, '(a|b)+ a.* [ab]')).toEqual({ event: '<em>a.b</em>', city: '<em>a+b</em>' });
  expect(hl({ event: 'user.login' }, 'u$er \\login ^user')).toEqual({ event: '<em>user</em>.<em>login</em>' });
});

test('Unicode: accents, dotted İ, final sigma, emoji, right-to-left text', () => {
  expect(hl({ city: 'Zürich' }, 'ZÜRICH')).toEqual({ city: '<em>Zürich</em>' });
  expect(hl({ city: 'İstanbul' }, 'İSTANBUL')).toEqual({ city: '<em>İstanbul</em>' });
  expect(hl({ city: 'ΑΘΗΝΑΣ' }, 'αθηνας')).toEqual({ city: '<em>ΑΘΗΝΑΣ</em>' });
  expect(hl({ userAgent: 'Safari 😀 👩‍👩‍👧x' }, '😀')).toEqual({ userAgent: 'Safari <em>😀</em> 👩‍👩‍👧x' });
  expect(hl({ userAgent: 'Safari 😀 👩‍👩‍👧x' }, '👩*')).toEqual({ userAgent: 'Safari 😀 <em>👩‍👩‍👧x</em>' });
  expect(hl({ city: 'תל אביב-יפו' }, 'יפו')).toEqual({ city: 'תל אביב-<em>יפו</em>' });
  expect(hl({ city: '\u202eevil\u202c.exe' }, 'exe')).toEqual({ city: '\u202eevil\u202c.<em>exe</em>' });
});

test('empty and missing fields are skipped', () => {
  expect(hl({ event: '', 'actor.id': undefined, city: null, ip: '1.2.3.4' }, '1')).toEqual({ ip: '<em>1</em>.2.3.4' });
});

test('escapeHtml escapes the five characters and nothing else', () => {
  expect(escapeHtml(`&<>"' é😀 &amp;`)).toBe('&amp;&lt;&gt;&quot;&#39; é😀 &amp;amp;');
});

const unescapeHtml = (html: string) =>
  html.replace(/&(amp|lt|gt|quot|#39);/g, (_, e: string) => ({ amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'" })[e]!);

test('2,000 random values and queries: the text survives, only whole matching tokens are wrapped, no markup leaks', () => {
  const rand = prng(42);
  const pool = [...'abAB01 .-_<>&"\'/=*', 'é', 'İ', 'Σ', '😀', '\u202e', 'ש'];
  const word = (n: number) => Array.from({ length: n }, () => pool[Math.floor(rand() * pool.length)]!).join('');
  let wrapped = 0;
  for (let n = 0; n < 2000; n++) {
    const value = word(Math.floor(rand() * 30));
    const tokens = tokenize(value);
    const pickToken = () => (tokens.length && rand() < 0.7 ? tokens[Math.floor(rand() * tokens.length)]! : word(2).replace(/[^a-z0-9]/gi, '') || 'a');
    const q = [pickToken(), rand() < 0.5 ? `${pickToken().slice(0, 1)}*` : pickToken()].join(' ');
    const out = highlight({ userAgent: value }, parseSearchQuery(q)).userAgent;
    if (out === undefined) continue;
    wrapped++;
    // nothing but our own tags is markup, and stripping them gives the text back
    expect(out.replace(/<\/?em>/g, '')).not.toMatch(/[<>"']/);
    expect(unescapeHtml(out.replace(/<\/?em>/g, ''))).toBe(value);
    // every highlight is a run of whole tokens, each matching a query word
    const qTokens = parseSearchQuery(q).clauses.flatMap((c) => (c.kind === 'text' ? [c.pattern] : []));
    for (const [, inner] of out.matchAll(/<em>(.*?)<\/em>/g)) {
      for (const t of tokenize(unescapeHtml(inner!)).map(foldCase)) {
        expect(qTokens.some((p) => (p.prefix ? t.startsWith(p.tokens[0]!) : t === p.tokens[0]))).toBe(true);
      }
    }
  }
  expect(wrapped).toBeGreaterThan(500);
});
