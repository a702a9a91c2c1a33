import { z } from 'zod';

// Rules over a whole body or query, beyond its fields one by one. Every fault of a request is reported at
// once: zod runs an object's refinements only when all its fields parsed, so these run regardless (`when`),
// and each reads the (possibly faulty) fields defensively.

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Options of a refinement that runs whenever the value is an object, even when some of its fields are at fault. */
export const evenWithFaultyFields = { when: (payload: { value: unknown }) => isPlainObject(payload.value) };

/**
 * An integer from `min` to `max`. Not zod's `.int()`: its refusal of a fraction stops every refinement of the
 * enclosing body (even those above), so the body's other faults would go unreported. Documented as an integer.
 */
export function integerSchema(min: number, max: number, message: string) {
  return z
    .number({ error: message })
    .superRefine((v, ctx) => {
      if (!Number.isSafeInteger(v) || v < min || v > max) ctx.addIssue({ code: 'custom', message });
    })
    .meta({ type: 'integer', minimum: min, maximum: max });
}

/**
 * A PATCH body that names at least one field: a refinement of the body schema (reported as field `(body)`
 * with the body's other faults), documented as `minProperties: 1`.
 */
export function atLeastOne<T extends z.ZodObject>(schema: T, message: string): T {
  return schema.refine((body) => Object.values(body as Record<string, unknown>).some((v) => v !== undefined), message).meta({ minProperties: 1 });
}
