/**
 * Tokens and case folding exactly as ClickHouse's text index sees them, so that what the compiled SQL matches
 * and what the highlighter marks are the same tokens.
 *
 * The text index's `splitByNonAlpha` tokenizer (also used by `hasToken`, `hasPhrase` and the `tokens()`
 * function) works on UTF-8 bytes: ASCII letters and digits and every byte >= 0x80 are token bytes; every
 * other ASCII byte separates tokens. Every non-ASCII code point is encoded in UTF-8 with bytes >= 0x80 only,
 * so on a JavaScript string the rule is: ASCII letters, ASCII digits and every code unit >= 0x80 (surrogates
 * included) are token characters. `é`, `ß`, emoji and Hebrew letters are part of tokens; `_`, `.`, `@`, `-`,
 * `~`, spaces and control characters split them. (The SQL *function* `splitByNonAlpha()` differs: it keeps
 * `~`, DEL and the non-whitespace control characters inside tokens. The index does not, so neither do we.)
 */

/** True when the UTF-16 code unit is a token character of ClickHouse's text-index tokenizer. */
export function isTokenChar(code: number): boolean {
  return code >= 0x80 || (code >= 0x30 && code <= 0x39) || (code >= 0x41 && code <= 0x5a) || (code >= 0x61 && code <= 0x7a);
}

/** A token of a text and where it lies in it (UTF-16 offsets, end exclusive). */
export interface TokenSpan {
  token: string;
  start: number;
  end: number;
}

/** The tokens of `text` with their offsets, in order. */
export function tokenSpans(text: string): TokenSpan[] {
  const spans: TokenSpan[] = [];
  let start = -1;
  for (let i = 0; i <= text.length; i++) {
    const inToken = i < text.length && isTokenChar(text.charCodeAt(i));
    if (inToken && start < 0) start = i;
    else if (!inToken && start >= 0) {
      spans.push({ token: text.slice(start, i), start, end: i });
      start = -1;
    }
  }
  return spans;
}

/** The tokens of `text`, exactly as ClickHouse's `tokens(text, 'splitByNonAlpha')` and its text index make them. */
export function tokenize(text: string): string[] {
  return tokenSpans(text).map((s) => s.token);
}

/**
 * Case folding, identical to the SQL of {@link foldSql}: Unicode lower case (ClickHouse's `lowerUTF8` and
 * JavaScript's `toLowerCase` agree, including `İ` → `i̇` and the Greek final sigma), then every final sigma `ς`
 * becomes `σ`. The second step removes the only context-dependent rule of Unicode lower-casing (Σ lowers to ς
 * at the end of a word), so folding a whole text and folding each of its tokens give the same tokens.
 * Folding never turns a token character into a separator or back, so token boundaries are unchanged.
 */
export function foldCase(text: string): string {
  return text.toLowerCase().replaceAll('ς', 'σ');
}

/** The ClickHouse expression that folds `expr` exactly like {@link foldCase}. */
export function foldSql(expr: string): string {
  return `replaceAll(lowerUTF8(${expr}), 'ς', 'σ')`;
}

/**
 * The columns whose text is searchable, in the order they are joined into `search_text`.
 */
export const SEARCH_TEXT_COLUMNS = [
  'event', 'actor_id', 'actor_email', 'target_id', 'target_type', 'result', 'ip', 'country', 'city', 'user_agent',
] as const;

/**
 * The expression `audit_logs.search_text` must be MATERIALIZED from for the compiled search SQL to be right:
 * the searchable columns joined by spaces and folded with {@link foldSql}. Plain `lower()` folds ASCII only,
 * so `École` would stay `École` in the column while the compiler folds a query `École` to `école`.
 */
export const SEARCH_TEXT_SQL = foldSql(`concat_ws(' ', ${SEARCH_TEXT_COLUMNS.join(', ')})`);
