import { AppError } from '@secsvc/shared';
import { foldCase, isTokenChar, tokenize } from './tokens';

/** The fields a query may name (`field:value`), spelled as in the SPEC's log entry. */
export const SEARCH_FIELDS = ['event', 'actor.id', 'actor.email', 'target.id', 'result', 'ip', 'country'] as const;
export type SearchField = (typeof SEARCH_FIELDS)[number];

/**
 * How `field:value` matches. `tokens`: like free text but only in that field, so `event:login` finds
 * `user.login`. `exact`: the whole value, case-insensitively (`value*`: the value starts with it).
 */
export const FIELD_MODES: Readonly<Record<SearchField, 'tokens' | 'exact'>> = {
  event: 'tokens',
  'actor.id': 'exact',
  'actor.email': 'exact',
  'target.id': 'exact',
  result: 'exact',
  ip: 'exact',
  country: 'exact',
};

export const SEARCH_LIMITS = {
  /** Characters (Unicode code points) in a query. */
  maxLength: 1000,
  /** Terms, phrases and field:value clauses, excluded ones included. */
  maxClauses: 32,
} as const;

/** Folded tokens that must appear in this order with nothing between; with `prefix`, the last one only begins a token. */
export interface TokenPattern {
  tokens: string[];
  prefix: boolean;
}

export type SearchClause =
  /** A term, `"phrase"` or `prefix*` anywhere in the searchable text. */
  | { kind: 'text'; negated: boolean; pattern: TokenPattern }
  /** `field:value` on a field matched by tokens (event). */
  | { kind: 'fieldTokens'; negated: boolean; field: SearchField; pattern: TokenPattern }
  /**
   * `field:value` on a field matched whole: `value` is folded; `tokens` are the value's tokens that are sure to
   * be whole tokens of the field (all of them, or all but an unfinished last one of a prefix).
   */
  | { kind: 'fieldExact'; negated: boolean; field: SearchField; value: string; prefix: boolean; tokens: string[] };

export interface ParsedQuery {
  clauses: SearchClause[];
}

function fail(message: string): never {
  throw AppError.field('query', message);
}

/** A short, single-line quote of the query text for an error message. */
function excerpt(text: string): string {
  const flat = text.replace(/\s+/g, ' ');
  return JSON.stringify(flat.length > 40 ? `${flat.slice(0, 40)}…` : flat);
}

const isSpace = (ch: string | undefined) => ch !== undefined && /\s/.test(ch);
const FIELD_NAME = /([A-Za-z][A-Za-z_.]*):/y;

function countCodePoints(text: string, stopAfter: number): number {
  let n = 0;
  for (const _ of text) if (++n > stopAfter) break;
  return n;
}

/** The pattern of a term (possibly ending in `*`) or a phrase. */
function patternOf(text: string, prefix: boolean, what: string): TokenPattern {
  const tokens = tokenize(text).map(foldCase);
  if (!tokens.length) fail(`${what} ${excerpt(text)} has no letters or digits to search for`);
  // `user.*` ends in a separator: the last token is complete, so it is the term `user.`.
  const open = prefix && isTokenChar(text.charCodeAt(text.length - 1));
  return { tokens, prefix: open };
}

/**
 * Parses a search query (see docs/api/search.md). Every clause must match; a clause preceded by `-`
 * must not. Throws AppError invalid_request naming `query` when the query cannot be parsed.
 */
export function parseSearchQuery(input: unknown): ParsedQuery {
  if (typeof input !== 'string') fail('must be a string');
  if (input.length > SEARCH_LIMITS.maxLength && countCodePoints(input, SEARCH_LIMITS.maxLength) > SEARCH_LIMITS.maxLength) {
    fail(`is too long: at most ${SEARCH_LIMITS.maxLength} characters`);
  }
  const s = input;
  const clauses: SearchClause[] = [];
  let i = 0;

  /** A quoted phrase starting at s[i] === '"'; returns its content and moves past the closing quote. */
  const readPhrase = (): string => {
    const open = i;
    const close = s.indexOf('"', open + 1);
    if (close < 0) fail(`has an unbalanced quote: the phrase opened at character ${open + 1} is not closed`);
    i = close + 1;
    if (s[i] === '*') fail(`a phrase cannot end in "*" (character ${i + 1}); use a term such as log* instead`);
    if (i < s.length && !isSpace(s[i])) fail(`needs a space after the closing quote at character ${close + 1}`);
    return s.slice(open + 1, close);
  };

  /** A bare word up to the next space; returns its text without a final `*` and whether it had one. */
  const readWord = (): { text: string; prefix: boolean } => {
    const start = i;
    while (i < s.length && !isSpace(s[i])) i++;
    const word = s.slice(start, i);
    if (word.includes('"')) fail(`has a quote inside ${excerpt(word)} (character ${start + 1 + word.indexOf('"')}); a phrase starts with a quote after a space`);
    const star = word.indexOf('*');
    if (star === 0 && word.length === 1) fail(`has a lone "*" at character ${start + 1}; write it right after the beginning of a word, as in log*`);
    if (star >= 0 && star !== word.length - 1) fail(`has "*" inside ${excerpt(word)}; "*" may only end a term`);
    return star < 0 ? { text: word, prefix: false } : { text: word.slice(0, -1), prefix: true };
  };

  for (;;) {
    while (isSpace(s[i])) i++;
    if (i >= s.length) break;
    if (clauses.length === SEARCH_LIMITS.maxClauses) fail(`has too many terms: at most ${SEARCH_LIMITS.maxClauses}`);
    const start = i;
    let negated = false;
    if (s[i] === '-') {
      negated = true;
      i++;
      if (i >= s.length || isSpace(s[i])) fail(`has a lone "-" at character ${start + 1}; write the term to exclude right after it, as in -logout`);
      if (s[i] === '-') fail(`has "--" at character ${start + 1}; exclude a term with a single "-"`);
    }

    if (s[i] === '"') {
      clauses.push({ kind: 'text', negated, pattern: patternOf(readPhrase(), false, 'the phrase') });
      continue;
    }

    FIELD_NAME.lastIndex = i;
    const named = FIELD_NAME.exec(s);
    if (!named) {
      const word = readWord();
      clauses.push({ kind: 'text', negated, pattern: patternOf(word.text, word.prefix, 'the term') });
      continue;
    }

    const name = named[1]!.toLowerCase();
    const field = SEARCH_FIELDS.find((f) => f === name);
    if (!field) {
      fail(`names an unknown field ${excerpt(named[1]!)}: the fields are ${SEARCH_FIELDS.join(', ')}; put text with a colon in quotes to search for it`);
    }
    i += named[0].length;
    if (i >= s.length || isSpace(s[i])) fail(`gives no value after "${named[0]}" (character ${start + 1})`);
    const quoted = s[i] === '"';
    const value = quoted ? { text: readPhrase(), prefix: false } : readWord();
    const what = `the value of ${field}`;
    if (FIELD_MODES[field] === 'tokens') {
      clauses.push({ kind: 'fieldTokens', negated, field, pattern: patternOf(value.text, value.prefix, what) });
      continue;
    }
    const folded = foldCase(value.text);
    const { tokens, prefix } = patternOf(folded, value.prefix, what);
    clauses.push({
      kind: 'fieldExact',
      negated,
      field,
      value: folded,
      prefix: value.prefix,
      tokens: prefix ? tokens.slice(0, -1) : tokens,
    });
  }

  if (!clauses.length) fail('is empty: give at least one term');
  if (clauses.every((c) => c.negated)) fail('only excludes: give at least one term that must match');
  return { clauses };
}
