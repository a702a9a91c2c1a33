/**
 * The search compiler's SQL against a real ClickHouse engine (chdb, in a fresh temporary data directory, with
 * the audit_logs table of the schema migrations):
 * every query form returns exactly the expected rows, a randomised differential test against a reference
 * evaluator, and the tokenizer and case folding compared with ClickHouse's own on Unicode text.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { openClickHouse, type ClickHouseClient } from '../src/clickhouse';
import type { LogRow } from '../src/rows';
import { migrateClickHouse } from '../src/schema';
import {
  compileSearchQuery,
  FIELD_COLUMNS,
  foldCase,
  foldSql,
  highlight,
  parseSearchQuery,
  SEARCH_TEXT_COLUMNS,
  tokenize,
  type ParsedQuery,
  type TokenPattern,
} from '../src/search';
import { prng } from './support/prng';

let dir: string;
let ch: ClickHouseClient;

type Row = Pick<LogRow, 'id' | 'environment' | 'event' | 'actor_id' | 'actor_email' | 'target_id' | 'target_type' | 'ip' | 'user_agent' | 'city' | 'country' | 'result'>;

const FF120 = 'Mozilla/5.0 Firefox/120.0';
// id, event, actor_id, actor_email, target_id, target_type, ip, user_agent, city, country, result
const TABLE: [string, string, string, string, string, string, string, string, string, string, string][] = [
  ['r01', 'user.login', 'user_01', 'alice@example.com', 'ses_a1', 'session', '81.2.69.142', 'Mozilla/5.0 (X11; Linux x86_64) Firefox/120.0', 'London', 'GB', 'success'],
  ['r02', 'user.logout', 'user_01', 'alice@example.com', 'ses_a1', 'session', '81.2.69.142', 'Mozilla/5.0 Firefox/121.0', 'London', 'GB', 'success'],
  ['r03', 'user.login', 'user_02', 'Bob.Smith@Example.COM', 'ses_b1', 'session', '10.0.0.7', 'curl/8.5.0', '', '', 'failure'],
  ['r04', 'user.password_reset.failed', '', 'malice@example.com', '', '', '192.168.1.10', '<script>alert(1)</script>', '', '', 'failure'],
  ['r05', 'user.created', 'user_03', 'carol@example.org', 'user_09', 'user', '2001:db8::1', 'Chrome "quoted" & <b>bold</b>', 'Zürich', 'CH', 'success'],
  ['r06', 'user.login', 'user_04', 'dave@example.org', 'ses_d1', 'session', '203.0.113.9', 'Safari 😀 עברית', 'İstanbul', 'TR', 'success'],
  ['r07', 'api_key.created', 'user_01', 'alice@example.com', 'key_01', 'api_key', '81.2.69.143', FF120, 'London', 'GB', 'success'],
  ['r08', 'user.login', 'user_05', 'ÉLODIE@Exemple.fr', 'ses_e1', 'session', '90.1.2.3', 'Opera/9.80', 'Paris', 'FR', 'success'],
  ['r09', 'user.login', 'user_06', 'nikos@example.gr', 'ses_n1', 'session', '2.84.0.1', 'Firefox/119.0', 'ΑΘΗΝΑΣ', 'GR', 'failure'],
  ['r10', 'user.logout', 'user_02', 'bob.smith@example.com', 'ses_b2', 'session', '10.0.0.70', 'curl/8.6.0', '', '', 'success'],
  ['r11', 'user.password_reset.requested', 'user_01', 'alice@example.com', '', '', '81.2.69.142', FF120, 'London', 'GB', 'success'],
  ['r12', 'authz.denied', 'user_04', 'dave@example.org', '', '', '203.0.113.9', 'Login-Bot/1.0', 'İstanbul', 'TR', 'failure'],
  ['r13', 'user.login', 'user_07', 'eve_login@example.com', 'ses_v1', 'session', '198.51.100.4', FF120, 'Berlin', 'DE', 'success'],
];
// Same words in the other environment: the caller's environment condition keeps them out.
const OTHER_ENV: Row = { ...toRow(TABLE[0]!), id: 't01', environment: 'test' };
// Filler with words no case below searches for.
const FILLER: Row[] = Array.from({ length: 24 }, (_, n) => ({
  id: `f${String(n).padStart(2, '0')}`,
  environment: 'live',
  event: ['policy.updated', 'policy.deleted', 'api_key.revoked'][n % 3]!,
  actor_id: `svc_${n % 4}`,
  actor_email: `ops+${n}@corp.test`,
  target_id: `pol_${n}`,
  target_type: 'policy',
  ip: `172.16.0.${n}`,
  user_agent: 'Go-http-client/1.1',
  city: 'Oslo',
  country: 'NO',
  result: n % 5 ? 'success' : 'failure',
}));

function toRow([id, event, actor_id, actor_email, target_id, target_type, ip, user_agent, city, country, result]: (typeof TABLE)[number]): Row {
  return { id, environment: 'live', event, actor_id, actor_email, target_id, target_type, ip, user_agent, city, country, result };
}
const ROWS: Row[] = [...TABLE.map(toRow), OTHER_ENV, ...FILLER];
const LIVE = ROWS.filter((r) => r.environment === 'live');

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'secsvc-search-'));
  ch = await openClickHouse({ path: dir });
  await migrateClickHouse(ch); // the real audit_logs table: search_text MATERIALIZED SEARCH_TEXT_SQL, text index
  await ch.insert({
    table: 'audit_logs',
    format: 'JSONEachRow',
    values: ROWS.map((r, n) => ({
      ...r,
      timestamp: `2026-11-01 12:00:00.${String(n).padStart(3, '0')}`,
      actor_type: r.actor_id ? 'user' : 'anonymous',
      region: '',
      lat: null,
      lng: null,
      trace_id: `req_${n}`,
      metadata: '{}',
    })),
  });
}, 60_000);

afterAll(async () => {
  await ch?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function search(q: string | ParsedQuery): Promise<string[]> {
  const { where, params } = compileSearchQuery(typeof q === 'string' ? parseSearchQuery(q) : q);
  const rs = await ch.query({
    query: `SELECT id FROM audit_logs WHERE environment = {env:String} AND (${where}) ORDER BY id`,
    query_params: { env: 'live', ...params },
    format: 'JSONEachRow',
  });
  return (await rs.json<{ id: string }>()).map((r) => r.id);
}

const LOGIN_ROWS = ['r01', 'r03', 'r06', 'r08', 'r09', 'r13'];
const ALICE = ['r01', 'r02', 'r07', 'r11'];

test.each<[string, string[]]>([
  // terms: whole tokens, case-insensitive, split on punctuation
  ['login', [...LOGIN_ROWS, 'r12'].sort()],
  ['LOGIN', [...LOGIN_ROWS, 'r12'].sort()],
  ['alice', ALICE],
  ['firefox 120', ['r01', 'r07', 'r11', 'r13']],
  ['ses_a1 ses_b1', []],
  ['session', ['r01', 'r02', 'r03', 'r06', 'r08', 'r09', 'r10', 'r13']],
  // a term with punctuation inside is its tokens in that order
  ['user.login', LOGIN_ROWS],
  ['alice@example.com', ALICE],
  ['firefox/120', ['r01', 'r07', 'r11', 'r13']],
  ['10.0.0.7', ['r03']],
  ['<script>alert(1)</script>', ['r04']],
  // phrases
  ['"password reset"', ['r04', 'r11']],
  ['"reset password"', []],
  ['"<script>"', ['r04']],
  ['"alert 1"', ['r04']],
  ['"login user"', LOGIN_ROWS], // the searchable fields are one text: event `user.login` then actor id `user_..`
  // prefixes
  ['log*', ['r01', 'r02', 'r03', 'r06', 'r08', 'r09', 'r10', 'r12', 'r13']],
  ['logi*', [...LOGIN_ROWS, 'r12'].sort()],
  ['x86*', ['r01']],
  ['user.password_re*', ['r04', 'r11']],
  ['alice.*', ALICE], // a separator before * ends the token: same as alice.
  // exclusions
  ['-logout log*', [...LOGIN_ROWS, 'r12'].sort()],
  ['-alice login', ['r03', 'r06', 'r08', 'r09', 'r12', 'r13']],
  ['login -"user login"', ['r12']],
  ['login -logi*', []],
  ['alice -actor.email:alice@example.com', []],
  // field:value, token fields
  ['event:login', LOGIN_ROWS],
  ['event:user.login', LOGIN_ROWS],
  ['event:"user.login"', LOGIN_ROWS],
  ['EVENT:LOGIN', LOGIN_ROWS],
  ['event:user.password*', ['r04', 'r11']],
  ['event:created', ['r05', 'r07']],
  // field:value, whole-value fields
  ['actor.email:alice@example.com', ALICE],
  ['actor.email:ALICE@EXAMPLE.COM', ALICE],
  ['actor.email:bob.smith@example.com', ['r03', 'r10']],
  ['actor.email:alice', []],
  ['actor.email:ali*', ALICE],
  ['actor.id:user_01', ALICE],
  ['actor.id:user_0*', ['r01', 'r02', 'r03', 'r05', 'r06', 'r07', 'r08', 'r09', 'r10', 'r11', 'r12', 'r13']],
  ['target.id:ses_a1', ['r01', 'r02']],
  ['result:failure', ['r03', 'r04', 'r09', 'r12', 'f00', 'f05', 'f10', 'f15', 'f20'].sort()],
  ['result:failure -event:login -event:policy* -event:api_key*', ['r04', 'r12']],
  ['ip:10.0.0.7', ['r03']],
  ['ip:10.0.0.7*', ['r03', 'r10']],
  ['ip:2001:db8::1', ['r05']],
  ['ip:2001:DB8::*', ['r05']],
  ['country:gb', ALICE],
  ['country:gb -event:logout', ['r01', 'r07', 'r11']],
  // Unicode: non-ASCII letters are token characters, folded with Unicode lower case
  ['zürich', ['r05']],
  ['ZÜRICH', ['r05']],
  ['élodie', ['r08']],
  ['ÉLODIE@exemple.FR', ['r08']],
  ['αθηνας', ['r09']],
  ['ΑΘΗΝΑΣ', ['r09']],
  ['İSTANBUL', ['r06', 'r12']],
  ['istanbul', []], // İ lowers to i + combining dot (U+0307), as in ClickHouse
  ['😀', ['r06']],
  ['עברית', ['r06']],
  ['safari😀', []],
])('%s', async (q, expected) => {
  expect(await search(q)).toEqual(expected);
});

const HIGHLIGHT_SOURCE = (r: Row) => ({
  event: r.event, 'actor.email': r.actor_email, 'actor.id': r.actor_id, 'target.id': r.target_id, result: r.result,
  ip: r.ip, country: r.country, city: r.city, userAgent: r.user_agent,
});

test.each<[string, Record<string, Record<string, string>>]>([
  [
    'firefox -logout actor.email:ALICE@example.com',
    {
      r01: { 'actor.email': '<em>alice@example.com</em>', userAgent: 'Mozilla/5.0 (X11; Linux x86_64) <em>Firefox</em>/120.0' },
      r07: { 'actor.email': '<em>alice@example.com</em>', userAgent: 'Mozilla/5.0 <em>Firefox</em>/120.0' },
      r11: { 'actor.email': '<em>alice@example.com</em>', userAgent: 'Mozilla/5.0 <em>Firefox</em>/120.0' },
    },
  ],
  ['pass* "reset requested" user', { r11: { event: '<em>user</em>.<em>password</em>_<em>reset.requested</em>', 'actor.id': '<em>user</em>_01' } }],
])('highlights of %s mark what matched in the rows the SQL returned', async (text, expected) => {
  const q = parseSearchQuery(text);
  const byId = new Map(ROWS.map((r) => [r.id, r]));
  const got = Object.fromEntries((await search(q)).map((id) => [id, highlight(HIGHLIGHT_SOURCE(byId.get(id)!), q)]));
  expect(got).toEqual(expected);
});

test('the SQL carries no query text: hostile input travels only as parameters', async () => {
  const q = `"'; DROP TABLE audit_logs; --" {env:String} actor.email:x'or'1'='1 drop* -ip:'\\x00'`;
  const compiled = compileSearchQuery(parseSearchQuery(q));
  for (const word of ['DROP', 'drop', 'env', "'1'", 'x00', '%']) expect(compiled.where).not.toContain(word);
  expect(await search(q)).toEqual([]);
  expect(await search('login')).toHaveLength(7);
});

/** The reference meaning of a query on one row, written from the README, independently of the SQL. */
function referenceMatch(row: Row, q: ParsedQuery): boolean {
  const hasRun = (tokens: string[], p: TokenPattern) =>
    tokens.some((_, i) => p.tokens.every((t, k) => (p.prefix && k === p.tokens.length - 1 ? (tokens[i + k] ?? '').startsWith(t) : tokens[i + k] === t)));
  const text = tokenize(foldCase(SEARCH_TEXT_COLUMNS.map((c) => row[c as keyof Row] ?? '').join(' ')));
  return q.clauses.every((c) => {
    let ok: boolean;
    if (c.kind === 'text') ok = hasRun(text, c.pattern);
    else {
      const value = foldCase(row[FIELD_COLUMNS[c.field] as keyof Row]);
      if (c.kind === 'fieldTokens') ok = hasRun(tokenize(value), c.pattern);
      else ok = c.prefix ? value.startsWith(c.value) : value === c.value;
    }
    return ok !== c.negated;
  });
}

test('300 random queries return exactly the rows the reference evaluator picks', async () => {
  const rand = prng(20261122);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const fieldsOf = Object.keys(FIELD_COLUMNS) as (keyof typeof FIELD_COLUMNS)[];
  let positive = false;
  const clause = (): string => {
    const row = pick(LIVE);
    const words = tokenize(SEARCH_TEXT_COLUMNS.map((c) => row[c as keyof Row]).join(' '));
    const word = pick(words);
    const neg = rand() < 0.25 ? '-' : '';
    positive ||= !neg;
    switch (Math.floor(rand() * 5)) {
      case 0:
        return neg + (rand() < 0.3 ? word.toUpperCase() : word);
      case 1:
        return `${neg}${word.slice(0, 1 + Math.floor(rand() * word.length))}*`;
      case 2: {
        const i = Math.floor(rand() * words.length);
        return `${neg}"${words.slice(i, i + 2 + Math.floor(rand() * 2)).join(' ')}"`;
      }
      case 3: {
        const field = pick(fieldsOf);
        const value = row[FIELD_COLUMNS[field] as keyof Row];
        if (!tokenize(value).length) return neg + word;
        return rand() < 0.3 ? `${neg}${field}:${value.slice(0, 1 + Math.floor(rand() * value.length)).replace(/[\s"*]/g, '')}*` : `${neg}${field}:"${value}"`;
      }
      default:
        return `${neg}event:${pick(tokenize(row.event))}`;
    }
  };
  let matchedSome = 0;
  for (let n = 0; n < 300; n++) {
    positive = false;
    let text = Array.from({ length: 1 + Math.floor(rand() * 3) }, clause).join(' ');
    if (!positive) text += ` ${pick(['login', 'success', 'example', 'user'])}`;
    let q: ParsedQuery;
    try {
      q = parseSearchQuery(text);
    } catch (err) {
      throw new Error(`generated query ${JSON.stringify(text)} did not parse: ${(err as Error).message}`);
    }
    const expected = LIVE.filter((r) => referenceMatch(r, q)).map((r) => r.id).sort();
    expect({ text, ids: await search(q) }).toEqual({ text, ids: expected });
    if (expected.length) matchedSome++;
  }
  // the generator draws its words from the rows, so most queries find something
  expect(matchedSome).toBeGreaterThan(100);
});

const UNICODE_SAMPLES = [
  'Héllo wörld café', 'ÀÉÎÕÜ straße STRASSE ẞ', 'İstanbul IŞIK ışık', 'ΟΔΟΣ ΣΑΣ.Χ όδος', 'Ⅻ ǅ ǈ ᾈ', 'АБВ Ёлка', 'ԱԲ աբ',
  '😀emoji 👩‍👩‍👧 🇬🇧flag', 'שלום עולם abc_def', 'مرحبا123بالعالم', 'x1y2\u00a0z3\u200bw4', 'K Kelvin Å Ω', '𐐀𐐁 𞤀',
  'tab\tnew\nline\r\0nul', "it's \"quoted\" <b>&amp;</b>", 'ﬀ ﬁ ŉ', 'a-b.c@d_e/f:g;h', '  leading and trailing  ', '',
];

test('tokenize and foldCase agree with ClickHouse tokens(splitByNonAlpha) and the folding SQL on Unicode text', async () => {
  const rand = prng(7);
  const pool = [...'aZ09._-@ /:~\t\x01\x7f', 'é', 'ß', 'İ', 'Σ', 'ς', 'ω', 'Ж', '😀', '\u00a0', 'ק', 'ﬀ', '\u0301', 'K', 'Å'];
  const pick = () => pool[Math.floor(rand() * pool.length)]!;
  const random = Array.from({ length: 300 }, () => Array.from({ length: Math.floor(rand() * 24) }, pick).join(''));
  const samples = [...UNICODE_SAMPLES, ...random];
  const rs = await ch.query({
    query: `SELECT s, tokens(s, 'splitByNonAlpha') AS tokens, ${foldSql('s')} AS folded, tokens(${foldSql('s')}, 'splitByNonAlpha') AS foldedTokens,
              splitByNonAlpha(s) AS functionTokens
            FROM (SELECT arrayJoin({samples:Array(String)}) AS s)`,
    query_params: { samples },
    format: 'JSONEachRow',
  });
  const rows = await rs.json<{ s: string; tokens: string[]; folded: string; foldedTokens: string[]; functionTokens: string[] }>();
  expect(rows).toHaveLength(samples.length);
  let sameAsFunction = 0;
  for (const r of rows) {
    expect({ s: r.s, tokens: tokenize(r.s), folded: foldCase(r.s) }).toEqual({ s: r.s, tokens: r.tokens, folded: r.folded });
    // folding a whole text and folding each of its tokens give the same tokens (what the highlighter relies on)
    expect({ s: r.s, tokens: tokenize(r.s).map(foldCase) }).toEqual({ s: r.s, tokens: r.foldedTokens });
    // the SQL function splitByNonAlpha() agrees except on "~", DEL and non-whitespace control characters
    // eslint-disable-next-line no-control-regex -- those control characters are the point of this check
    if (!/[~\x00-\x08\x0e-\x1f\x7f]/.test(r.s)) {
      expect({ s: r.s, tokens: r.functionTokens }).toEqual({ s: r.s, tokens: r.tokens });
      sameAsFunction++;
    }
  }
  expect(sameAsFunction).toBeGreaterThan(UNICODE_SAMPLES.length - 2);
});

test('hasToken, hasPhrase and the text index split on the characters tokenize splits on', async () => {
  const rs = await ch.query({
    query: `SELECT hasToken({h:String}, 'b') AS a, hasPhrase({h:String}, 'a b c d') AS b, hasToken({h:String}, 'é😀') AS c`,
    query_params: { h: 'a~b\x01c\x7fd é😀' },
    format: 'JSONEachRow',
  });
  expect(await rs.json()).toEqual([{ a: 1, b: 1, c: 1 }]);
  expect(tokenize('a~b\x01c\x7fd é😀')).toEqual(['a', 'b', 'c', 'd', 'é😀']);
});
