import { z } from 'zod';

export type Json = Record<string, unknown>;

const REF = '#/components/schemas/';

/** Replaces zod's local `#/$defs/X` references by `#/components/schemas/X`, everywhere in a value. */
function rewriteRefs(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(rewriteRefs);
  if (value === null || typeof value !== 'object') return value;
  const out: Json = {};
  for (const [k, v] of Object.entries(value)) out[k] = k === '$ref' && typeof v === 'string' ? v.replace(/^#\/\$defs\//, REF) : rewriteRefs(v);
  return out;
}

/** A string without NUL, as a pattern (a positive rule: generators handle `pattern` far better than `not`). */
const NO_NUL = '^[^\\u0000]*$';
const STRING_KEYWORDS = ['pattern', 'minLength', 'maxLength', 'format'];

/**
 * A schema whose metadata names another JSON type than zod derived (a query string parsed to an integer,
 * `.meta({ type: 'integer', minimum, maximum })`) keeps none of the string's keywords: the document
 * describes the value as the client writes it.
 */
function documentedType(ctx: { zodSchema: unknown; jsonSchema: Json }): void {
  const meta = z.globalRegistry.get(ctx.zodSchema as z.ZodType);
  if (meta && typeof meta.type === 'string' && meta.type !== 'string') for (const k of STRING_KEYWORDS) delete ctx.jsonSchema[k];
}

/**
 * Request-side schemas also say what the input guard refuses (middleware/input.ts): no string may hold a NUL
 * character. A string already bounded by an anchored pattern of literal classes cannot hold one.
 */
export function refuseNul(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(refuseNul);
  if (schema === null || typeof schema !== 'object') return schema;
  const out: Json = {};
  for (const [k, v] of Object.entries(schema)) out[k] = k === 'enum' || k === 'const' || k === 'default' || k === 'examples' ? v : refuseNul(v);
  const isString = out.type === 'string' || (Array.isArray(out.type) && out.type.includes('string'));
  if (isString && out.enum === undefined && out.const === undefined && !nulFree(out)) {
    // A second pattern goes in allOf (one schema holds one pattern).
    if (out.pattern === undefined) out.pattern = NO_NUL;
    else out.allOf = [...((out.allOf as unknown[] | undefined) ?? []), { pattern: NO_NUL }];
  }
  if (out.type === 'object' && out.additionalProperties !== false) out.propertyNames = { pattern: NO_NUL };
  return out;
}

/**
 * Free-form JSON of bounded depth (`x-json-depth: n`, user metadata): an object whose values are JSON of at
 * most n - 1 further levels (`{}` and `[]` are one level), spelled out as components JsonValue0..JsonValue<n-1> (no recursion, which
 * generators handle badly), with the input guard's rule on every string and key.
 */
export function boundedJson(schema: unknown, set: SchemaSet): unknown {
  if (Array.isArray(schema)) return schema.map((s) => boundedJson(s, set));
  if (schema === null || typeof schema !== 'object') return schema;
  const depth = (schema as Json)['x-json-depth'];
  if (typeof depth !== 'number') return Object.fromEntries(Object.entries(schema).map(([k, v]) => [k, boundedJson(v, set)]));
  const { 'x-json-depth': _depth, additionalProperties: _any, ...rest } = schema as Json;
  for (let level = 0; level < depth; level++) {
    const scalars: Json[] = [{ type: 'string', pattern: NO_NUL }, { type: 'number' }, { type: 'boolean' }, { type: 'null' }];
    const below = level > 0 ? set.ref(`JsonValue${level - 1}`) : undefined;
    set.add(`JsonValue${level}`, {
      description: `Any JSON value nested at most ${level} level${level === 1 ? '' : 's'} deep`,
      anyOf: below ? [...scalars, { type: 'array', items: below }, { type: 'object', additionalProperties: below, propertyNames: { pattern: NO_NUL } }] : scalars,
    });
  }
  // The object itself is one level: its values are JSON of at most depth - 1 levels.
  return { ...rest, type: 'object', additionalProperties: set.ref(`JsonValue${depth - 1}`), propertyNames: { pattern: NO_NUL } };
}

function nulFree(s: Json): boolean {
  if (s.format === 'email' || s.format === 'date-time' || s.format === 'uri') return true;
  const p = s.pattern;
  return typeof p === 'string' && p.startsWith('^') && p.endsWith('$') && !/\[\^|(?<!\\)\.|\\[SDWs]/.test(p);
}

/**
 * JSON Schemas (OpenAPI 3.1 is JSON Schema 2020-12) of the zod schemas that validate requests and shape
 * responses. A schema registered with an id (`named`) becomes a component and is referenced wherever it
 * appears; the same id must always mean the same schema.
 */
export class SchemaSet {
  readonly components: Record<string, Json> = {};

  convert(schema: z.ZodType, io: 'input' | 'output'): Json {
    const { $schema: _dialect, $defs, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any', override: documentedType }) as Json & { $defs?: Record<string, Json> };
    for (const [id, def] of Object.entries($defs ?? {})) this.add(id, rewriteRefs(def) as Json);
    return rewriteRefs(rest) as Json;
  }

  /** A component by hand (non-JSON bodies), or one zod produced; a second, different definition is a bug. */
  add(id: string, def: Json): void {
    const existing = this.components[id];
    if (existing && JSON.stringify(existing) !== JSON.stringify(def)) throw new Error(`OpenAPI component ${id} has two different definitions`);
    this.components[id] = def;
  }

  ref(id: string): Json {
    if (!this.components[id]) throw new Error(`OpenAPI component ${id} is not defined`);
    return { $ref: `${REF}${id}` };
  }
}

/** Gives a zod schema its component name (once per process; the registry is zod's global one). */
export function named<T extends z.ZodType>(schema: T, id: string): T {
  const meta = z.globalRegistry.get(schema);
  if (meta?.id !== id) z.globalRegistry.add(schema as z.ZodType, { ...meta, id });
  return schema;
}
