import { isUtf8 } from 'node:buffer';
import type { FieldError } from './errors';

/**
 * What every input must satisfy before any code looks at it, on every HTTP route and every RPC: text that
 * PostgreSQL, ClickHouse and protobuf can carry unchanged, and a bounded nesting depth. Checked once at each
 * edge (the gateway's request guard, the gRPC server wrapper), iteratively, so no input can overflow a stack.
 */
export const INPUT_LIMITS = {
  /** Deepest nesting of objects and arrays in any request (user metadata allows 10 of these levels). */
  maxDepth: 32,
  /** At most this many faults are named in one answer; the last detail says how many more there were. */
  maxFaults: 50,
} as const;

/** A UTF-16 surrogate without its other half: no UTF-8 form exists (PostgreSQL's jsonb refuses its escape). */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const LONE_SURROGATES = new RegExp(LONE_SURROGATE.source, 'g');

/** Why a string cannot be stored as given, or undefined when it can. */
export function textFault(s: string): string | undefined {
  if (s.includes('\u0000')) return 'must not contain the NUL character (U+0000)';
  if (LONE_SURROGATE.test(s)) return 'must be valid Unicode (it contains a lone surrogate)';
  return undefined;
}

const joinPath = (base: string, key: string | number): string =>
  typeof key === 'number' ? `${base}[${key}]` : base ? `${base}.${key}` : key;

/**
 * Every fault of a parsed input (a JSON body, a query, a gRPC message), named by its full path from the root
 * (`metadata.tags[2]`, `context.ip`). A key that is itself faulty is named by its parent and the key as far as
 * it can be shown. Depth is checked before descending, so a 100,000-level document costs one step per level up
 * to the limit and is then refused.
 */
export function inputFaults(value: unknown, root = '', limits: { maxDepth: number; maxFaults: number } = INPUT_LIMITS): FieldError[] {
  const faults: FieldError[] = [];
  let more = 0;
  const add = (field: string, message: string) => {
    if (faults.length < limits.maxFaults) faults.push({ field: field || '(body)', message });
    else more++;
  };
  // Depth first, children pushed in reverse: faults come out in document order.
  const stack: { v: unknown; path: string; depth: number }[] = [{ v: value, path: root, depth: 0 }];
  while (stack.length > 0) {
    const { v, path, depth } = stack.pop()!;
    if (typeof v === 'string') {
      const why = textFault(v);
      if (why) add(path, why);
      continue;
    }
    if (v === null || typeof v !== 'object' || ArrayBuffer.isView(v)) continue;
    if (depth >= limits.maxDepth) {
      add(path, `is nested too deeply (at most ${limits.maxDepth} levels of objects and arrays)`);
      continue;
    }
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push({ v: v[i], path: joinPath(path, i), depth: depth + 1 });
      continue;
    }
    const keys = Object.keys(v);
    for (let i = keys.length - 1; i >= 0; i--) {
      const key = keys[i]!;
      const why = textFault(key);
      if (why) {
        add(joinPath(path, key.replaceAll('\u0000', '\\u0000').replace(LONE_SURROGATES, '\uFFFD')), `key ${why}`);
        continue;
      }
      stack.push({ v: (v as Record<string, unknown>)[key], path: joinPath(path, key), depth: depth + 1 });
    }
  }
  if (more > 0) faults.push({ field: '(body)', message: `and ${more} more fault${more === 1 ? '' : 's'} of the same kinds` });
  return faults;
}

/** Bytes that are not UTF-8 (RFC 8259 8.1 requires it of JSON; forms and queries are read as UTF-8 too). */
export const isValidUtf8 = (bytes: Uint8Array): boolean => isUtf8(bytes);
