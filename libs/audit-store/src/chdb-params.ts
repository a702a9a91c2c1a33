import type { ClickHouseClient } from '@clickhouse/client';

/**
 * Query parameters bound in the statement's text, for embedded chdb only. chdb runs every parameterised query
 * of a process one after another (its bindings share state in libchdb: concurrent ones corrupt each other, so
 * chdb chains them process-wide), while a statement without parameters runs alongside others. Bound here, a
 * search's page and its count, an export's page and the consumer's insert run side by side on chdb as they do
 * on a ClickHouse server (which keeps its own server-side binding).
 *
 * Values become typed literals: strings single-quoted with every backslash, quote and control character
 * escaped (ClickHouse's string literal syntax), so a value can never end its literal; integers only when they
 * are integers; string arrays as a cast array. Any other parameter type is refused, not guessed.
 */

const PLACEHOLDER = /\{([A-Za-z_][A-Za-z0-9_]*):([A-Za-z0-9_()]+)\}/g;

/** A ClickHouse string literal holding exactly `s`. */
export function stringLiteral(s: string): string {
  let out = "'";
  for (const ch of s) {
    const code = ch.codePointAt(0)!;
    if (ch === '\\' || ch === "'") out += `\\${ch}`;
    else if (code < 0x20 || code === 0x7f) out += `\\x${code.toString(16).padStart(2, '0')}`;
    else out += ch;
  }
  return `${out}'`;
}

function integerLiteral(name: string, value: unknown, unsigned: boolean): string {
  const text = typeof value === 'bigint' ? value.toString() : typeof value === 'number' && Number.isSafeInteger(value) ? String(value) : typeof value === 'string' ? value : '';
  if (!(unsigned ? /^\d+$/ : /^-?\d+$/).test(text)) throw new Error(`query parameter ${name}: not ${unsigned ? 'a non-negative' : 'an'} integer`);
  return text;
}

function text(name: string, value: unknown): string {
  if (typeof value !== 'string') throw new Error(`query parameter ${name}: not a string`);
  return value;
}

/** The literal of one parameter value of a type. */
export function parameterLiteral(name: string, type: string, value: unknown): string {
  switch (type) {
    case 'String':
      return stringLiteral(text(name, value));
    case 'UInt8':
    case 'UInt16':
    case 'UInt32':
    case 'UInt64':
    case 'Int32':
    case 'Int64':
      return `to${type}(${integerLiteral(name, value, type.startsWith('U'))})`;
    case 'Array(String)':
      if (!Array.isArray(value)) throw new Error(`query parameter ${name}: not an array`);
      return `CAST([${value.map((v, i) => stringLiteral(text(`${name}[${i}]`, v))).join(', ')}], 'Array(String)')`;
    default:
      throw new Error(`query parameter ${name}: type ${type} is not bound in text`);
  }
}

/** `query` with each `{name:Type}` replaced by the literal of `params[name]` (a missing one is an error). */
export function bindInText(query: string, params: Record<string, unknown>): string {
  return query.replace(PLACEHOLDER, (_, name: string, type: string) => {
    if (!Object.hasOwn(params, name)) throw new Error(`query parameter ${name} has no value`);
    return parameterLiteral(name, type, params[name]);
  });
}

/**
 * Parameter values bound in text must fit the statement size limit (ClickHouse's default is 256 KiB, which
 * server-side parameters do not count against): the consumer's duplicate check lists up to AUDIT_BATCH_SIZE ids.
 */
export const CHDB_MAX_QUERY_SIZE = String(64 * 1024 * 1024);

/** The string values of parameters, longest first (what an error message may quote). */
const valuesOf = (params: Record<string, unknown>): string[] =>
  Object.values(params)
    .flatMap((v) => (Array.isArray(v) ? v : [v]))
    .filter((v): v is string => typeof v === 'string' && v.length >= 4)
    .sort((a, b) => b.length - a.length);

/**
 * The client with query, exec and command binding their parameters in the text (for chdb, see above). An error
 * of such a statement has the values taken out of its message (ClickHouse quotes the statement there), so
 * search terms, emails and ids do not reach logs through it.
 */
export function withParamsInText(ch: ClickHouseClient): ClickHouseClient {
  type Params = { query: string; query_params?: Record<string, unknown> };
  const methods = ch as unknown as Record<'query' | 'exec' | 'command', (p: Params) => Promise<unknown>>;
  for (const name of ['query', 'exec', 'command'] as const) {
    const original = methods[name].bind(ch);
    methods[name] = (p) => {
      if (!p.query_params || Object.keys(p.query_params).length === 0) return original(p);
      const { query_params, ...rest } = p;
      return original({ ...rest, query: bindInText(p.query, query_params) }).catch((err: unknown) => {
        if (err instanceof Error) for (const v of valuesOf(query_params)) err.message = err.message.split(v).join('<value>');
        throw err;
      });
    };
  }
  return ch;
}
