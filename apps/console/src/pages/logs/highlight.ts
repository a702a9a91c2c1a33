// The search answer's highlights (docs/api/search.md): a field's text HTML-escaped, each match wrapped in
// <em>…</em>. The console never hands that text to the browser as HTML: it is read here into plain text
// segments, marked or not, which the page renders as text and <mark> elements.

export interface Segment {
  text: string;
  mark: boolean;
}

const ENTITIES: Readonly<Record<string, string>> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

function entity(name: string): string | undefined {
  if (name in ENTITIES) return ENTITIES[name];
  const m = /^#(?:x([0-9a-f]{1,6})|(\d{1,7}))$/i.exec(name);
  if (!m) return undefined;
  const code = m[1] ? parseInt(m[1], 16) : Number(m[2]);
  return code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff) ? undefined : String.fromCodePoint(code);
}

/**
 * The segments of a highlight: text between `<em>` and `</em>` marked, the five escapes (and numeric ones)
 * decoded. Anything else that looks like markup (another tag, a bare `<`, `>` or `&`, nested or unclosed
 * `<em>`) means the text is not what the API promises: undefined.
 */
export function parseHighlight(html: string): Segment[] | undefined {
  const out: Segment[] = [];
  let mark = false;
  const push = (text: string) => {
    const last = out.at(-1);
    if (last && last.mark === mark) last.text += text;
    else out.push({ text, mark });
  };
  for (const m of html.matchAll(/<em>|<\/em>|&([#\w]+);|[<>&]|[^<>&]+/gi)) {
    const token = m[0];
    if (token.toLowerCase() === '<em>') {
      if (mark) return undefined;
      mark = true;
    } else if (token.toLowerCase() === '</em>') {
      if (!mark) return undefined;
      mark = false;
    } else if (m[1] !== undefined) {
      const decoded = entity(m[1]);
      if (decoded === undefined) return undefined;
      push(decoded);
    } else if (token === '<' || token === '>' || token === '&') {
      return undefined;
    } else {
      push(token);
    }
  }
  return mark ? undefined : out.filter((s) => s.text !== '');
}

/**
 * What to show of a field: its highlight's segments when there is one and it reads back as the field's own
 * value, else the value unmarked (so a highlight can only ever mark the real text, never replace it).
 */
export function fieldSegments(value: string, html: string | undefined): Segment[] {
  const plain = value === '' ? [] : [{ text: value, mark: false }];
  if (html === undefined) return plain;
  const segments = parseHighlight(html);
  if (!segments || segments.map((s) => s.text).join('') !== value) return plain;
  return segments;
}
