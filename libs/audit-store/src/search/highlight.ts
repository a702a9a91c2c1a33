import type { ParsedQuery, SearchClause, TokenPattern } from './query';
import { foldCase, tokenSpans } from './tokens';

/** The displayed fields of a log entry that get highlights, keyed as in the SPEC. */
export const HIGHLIGHT_FIELDS = ['event', 'actor.email', 'actor.id', 'target.id', 'result', 'ip', 'country', 'city', 'userAgent'] as const;
export type HighlightField = (typeof HIGHLIGHT_FIELDS)[number];
export type HighlightSource = Partial<Record<HighlightField, string | null | undefined>>;
export type Highlights = Partial<Record<HighlightField, string>>;

const HTML_ESCAPES: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Escapes the five HTML special characters; applied once to raw text, so nothing is escaped twice. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);
}

type Span = [start: number, end: number];
interface FoldedToken {
  folded: string;
  start: number;
  end: number;
}

/** Every run of tokens matching the pattern, from the first token's start to the last one's end. */
function patternSpans(tokens: FoldedToken[], p: TokenPattern): Span[] {
  const n = p.tokens.length;
  const spans: Span[] = [];
  for (let i = 0; i + n <= tokens.length; i++) {
    let ok = true;
    for (let k = 0; k < n && ok; k++) {
      const token = tokens[i + k]!.folded;
      const wanted = p.tokens[k]!;
      ok = p.prefix && k === n - 1 ? token.startsWith(wanted) : token === wanted;
    }
    if (ok) spans.push([tokens[i]!.start, tokens[i + n - 1]!.end]);
  }
  return spans;
}

function clauseSpans(field: HighlightField, value: string, tokens: FoldedToken[], c: SearchClause): Span[] {
  if (c.negated) return [];
  switch (c.kind) {
    case 'text':
      return patternSpans(tokens, c.pattern);
    case 'fieldTokens':
      return c.field === field ? patternSpans(tokens, c.pattern) : [];
    case 'fieldExact': {
      if (c.field !== field) return [];
      const folded = foldCase(value);
      return (c.prefix ? folded.startsWith(c.value) : folded === c.value) ? [[0, value.length]] : [];
    }
  }
}

/** `value` HTML-escaped, with each span (merged where they overlap) wrapped in `<em>`. */
function render(value: string, spans: Span[]): string {
  spans.sort((a, b) => a[0] - b[0] || b[1] - a[1]);
  let out = '';
  let at = 0;
  for (let i = 0; i < spans.length; ) {
    const start = spans[i]![0];
    let end = spans[i]![1];
    for (i++; i < spans.length && spans[i]![0] <= end; i++) end = Math.max(end, spans[i]![1]);
    out += `${escapeHtml(value.slice(at, start))}<em>${escapeHtml(value.slice(start, end))}</em>`;
    at = end;
  }
  return out + escapeHtml(value.slice(at));
}

/**
 * The highlights of one entry for a parsed query: for every field where a clause matched, the field's text
 * HTML-escaped with each matched term, phrase or prefixed token wrapped in `<em>...</em>`. Tokens are compared
 * as ClickHouse compares them (same tokenizer, same case folding). Excluded clauses are never highlighted; a
 * `field:value` clause highlights only its field (a whole-value field entirely).
 */
export function highlight(source: HighlightSource, query: ParsedQuery): Highlights {
  const out: Highlights = {};
  for (const field of HIGHLIGHT_FIELDS) {
    const value = source[field];
    if (typeof value !== 'string' || !value) continue;
    const tokens = tokenSpans(value).map((t) => ({ folded: foldCase(t.token), start: t.start, end: t.end }));
    const spans = query.clauses.flatMap((c) => clauseSpans(field, value, tokens, c));
    if (spans.length) out[field] = render(value, spans);
  }
  return out;
}
