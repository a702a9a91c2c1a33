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

/**
 * JSON Schemas (OpenAPI 3.1 is JSON Schema 2020-12) of the zod schemas that validate requests and shape
 * responses. A schema registered with an id (`named`) becomes a component and is referenced wherever it
 * appears; the same id must always mean the same schema.
 */
export class SchemaSet {
  readonly components: Record<string, Json> = {};

  convert(schema: z.ZodType, io: 'input' | 'output'): Json {
    const { $schema: _dialect, $defs, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Json & { $defs?: Record<string, Json> };
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
