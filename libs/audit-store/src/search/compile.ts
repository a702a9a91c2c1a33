import type { ParsedQuery, SearchClause, SearchField, TokenPattern } from './query';
import { foldSql, isTokenChar } from './tokens';

/** A WHERE fragment and its ClickHouse query parameters; user text only ever travels in `params`. */
export interface CompiledSearch {
  where: string;
  params: Record<string, string>;
  /**
   * Set when the whole condition is `hasToken(search_text, <indexToken>)` (a query of one term): the matches in
   * a part are then exactly the rows of the token's posting list in the part's text index, whose length the
   * index stores (LogStore.count reads it instead of counting rows).
   */
  indexToken?: string;
}

export interface CompileOptions {
  /** Prefix of the parameter names (`{sq0:String}`, ...), chosen not to clash with the caller's. */
  paramPrefix?: string;
}

/** The `audit_logs` column of each query field. */
export const FIELD_COLUMNS: Readonly<Record<SearchField, string>> = {
  event: 'event',
  'actor.id': 'actor_id',
  'actor.email': 'actor_email',
  'target.id': 'target_id',
  result: 'result',
  ip: 'ip',
  country: 'country',
};

const SEARCH_TEXT = 'search_text';
/** One separator of `splitByNonAlpha` as an RE2 class: any ASCII character but a letter or a digit. */
const SEPARATOR = '[\\x00-\\x2f\\x3a-\\x40\\x5b-\\x60\\x7b-\\x7f]';
/** Tokens hold only ASCII letters, digits and non-ASCII characters; anything else is escaped all the same. */
const escapeRegex = (token: string) =>
  Array.from(token, (c) => (isTokenChar(c.charCodeAt(0)) ? c : `\\x{${c.charCodeAt(0).toString(16)}}`)).join('');

/**
 * Compiles a parsed query into a condition over `audit_logs`, for the caller to AND with its own
 * (`WHERE environment = {env:String} AND timestamp >= ... AND (<where>)`).
 *
 * The text index on `search_text` answers `hasToken` and `hasPhrase` on it; every positive clause carries one
 * of those when it has a whole token, so that only granules that may match are read. The exact condition
 * comes after it: `match` with a token-boundary regex for prefixes, the column itself for `field:value`.
 * An excluded clause is `NOT` its exact condition.
 */
export function compileSearchQuery(query: ParsedQuery, options: CompileOptions = {}): CompiledSearch {
  const prefix = options.paramPrefix ?? 'sq';
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(prefix)) throw new Error(`invalid parameter prefix ${JSON.stringify(prefix)}`);
  const params: Record<string, string> = {};
  const param = (value: string): string => {
    const name = `${prefix}${Object.keys(params).length}`;
    params[name] = value;
    return `{${name}:String}`;
  };

  /** The condition that `target` (folded text) holds the pattern's tokens in order. */
  const patternSql = (target: string, p: TokenPattern): string => {
    if (p.prefix) {
      const regex = `(?:^|${SEPARATOR})${p.tokens.map(escapeRegex).join(`${SEPARATOR}+`)}`;
      return `match(${target}, ${param(regex)})`;
    }
    return p.tokens.length === 1 ? `hasToken(${target}, ${param(p.tokens[0]!)})` : `hasPhrase(${target}, ${param(p.tokens.join(' '))})`;
  };

  /**
   * Conditions the text index answers that every row matching `p` satisfies. A prefix gets none for its last,
   * unfinished token: a `LIKE '%log%'` would let the index narrow a rare prefix, but bench/audit-search measured
   * it slower than `match()` alone for prefixes with many hits (bench/RESULTS.md).
   */
  const indexSql = (p: TokenPattern): string[] => {
    if (!p.prefix) return [patternSql(SEARCH_TEXT, p)];
    const whole = p.tokens.slice(0, -1);
    return whole.length ? [patternSql(SEARCH_TEXT, { tokens: whole, prefix: false })] : [];
  };

  const clauseSql = (c: SearchClause): string => {
    switch (c.kind) {
      case 'text':
        if (!c.pattern.prefix) return patternSql(SEARCH_TEXT, c.pattern);
        return join([...(c.negated ? [] : indexSql(c.pattern)), patternSql(SEARCH_TEXT, c.pattern)]);
      case 'fieldTokens':
        return join([...(c.negated ? [] : indexSql(c.pattern)), patternSql(foldSql(FIELD_COLUMNS[c.field]), c.pattern)]);
      case 'fieldExact': {
        const column = foldSql(FIELD_COLUMNS[c.field]);
        const index = !c.negated && c.tokens.length ? [patternSql(SEARCH_TEXT, { tokens: c.tokens, prefix: false })] : [];
        const exact = c.prefix ? `startsWith(${column}, ${param(c.value)})` : `${column} = ${param(c.value)}`;
        return join([...index, exact]);
      }
    }
  };

  const where = query.clauses.map((c) => (c.negated ? `NOT (${clauseSql(c)})` : `(${clauseSql(c)})`)).join(' AND ');
  const [only] = query.clauses;
  const single = query.clauses.length === 1 && only?.kind === 'text' && !only.negated && !only.pattern.prefix && only.pattern.tokens.length === 1;
  return single ? { where, params, indexToken: only.pattern.tokens[0]! } : { where, params };
}

const join = (parts: string[]) => parts.join(' AND ');
