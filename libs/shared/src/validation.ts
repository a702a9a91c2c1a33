import { z } from 'zod';
import { AppError, type FieldError } from './errors';

/** Documented limits of user fields (README "Limits"). */
export const userLimits = {
  emailMaxLength: 254,
  nameMaxLength: 200,
  maxRoles: 50,
  metadataMaxBytes: 16 * 1024,
  metadataMaxDepth: 10,
} as const;

export const ROLE_PATTERN = /^role_[a-z0-9][a-z0-9_-]{0,62}$/;

/**
 * zod's email rule, with the lengths of RFC 5321 (local part at most 64 octets) and RFC 1035 (labels of 1 to
 * 63 characters that neither start nor end with a hyphen) added: the document states the same pattern.
 */
export const EMAIL_PATTERN =
  /^(?=[^@]{1,64}@)(?!\.)(?!.*\.\.)[A-Za-z0-9_'+\-.]*[A-Za-z0-9_+-]@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}$/;

export const emailSchema = z
  .email({ pattern: EMAIL_PATTERN, error: (i) => (i.input === undefined ? 'is required' : i.code === 'invalid_type' ? 'must be a string' : 'invalid email format') })
  .max(userLimits.emailMaxLength, `must be at most ${userLimits.emailMaxLength} characters`);

/**
 * Holds a character that String.prototype.trim keeps: JavaScript's white space spelled out, so the OpenAPI
 * document's pattern means the same in every regex engine (Python's \\s, for one, is another set).
 */
export const NOT_BLANK = /[^\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]/;

export const nameSchema = z
  .string({ error: (i) => (i.input === undefined ? 'is required' : 'must be a string') })
  .max(userLimits.nameMaxLength, `must be at most ${userLimits.nameMaxLength} characters`)
  .regex(NOT_BLANK, 'must not be empty');

export const rolesSchema = z
  .array(z.string({ error: 'must be a string' }).regex(ROLE_PATTERN, 'must look like role_<name> (a-z, 0-9, _ and -)'), {
    error: 'must be an array of strings',
  })
  .max(userLimits.maxRoles, `at most ${userLimits.maxRoles} roles`)
  .refine((roles) => new Set(roles).size === roles.length, 'must not contain duplicates')
  .meta({ uniqueItems: true });

/**
 * Depth of a JSON value (a scalar is 0, `{}` is 1) and whether it holds a "__proto__" key, in one iterative
 * walk that stops descending past `maxDepth` (so no input can overflow the stack).
 */
function shapeOf(value: unknown, maxDepth: number): { depth: number; protoKey: boolean } {
  let deepest = 0;
  let protoKey = false;
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [v, d] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    deepest = Math.max(deepest, d + 1);
    if (d + 1 > maxDepth) continue;
    if (!Array.isArray(v) && Object.hasOwn(v, '__proto__')) protoKey = true;
    for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push([child, d + 1]);
  }
  return { depth: deepest, protoKey };
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Free-form metadata: a JSON object passed through untouched (same keys, order and values), bounded in size
 * and depth. A "__proto__" key is refused rather than silently dropped (prototype pollution guard).
 */
export const metadataSchema = z
  .custom<Record<string, unknown>>(isPlainObject, { error: 'must be an object' })
  .superRefine((m, ctx) => {
    const { depth, protoKey } = shapeOf(m, userLimits.metadataMaxDepth);
    if (depth > userLimits.metadataMaxDepth) {
      ctx.addIssue({ code: 'custom', message: `must be nested at most ${userLimits.metadataMaxDepth} levels` });
      return;
    }
    if (protoKey) ctx.addIssue({ code: 'custom', message: 'must not contain the key "__proto__"' });
    if (Buffer.byteLength(JSON.stringify(m)) > userLimits.metadataMaxBytes) {
      ctx.addIssue({ code: 'custom', message: `must be at most ${userLimits.metadataMaxBytes} bytes as JSON` });
    }
  })
  // x-json-depth: the OpenAPI document spells out the nesting bound (see the gateway's openapi/schemas.ts).
  .meta({ type: 'object', additionalProperties: true, 'x-json-depth': userLimits.metadataMaxDepth, description: 'Free-form JSON object, at most 16 KiB as JSON and 10 levels deep' });

export const environmentSchema = z.enum(['live', 'test']);
export type Environment = z.infer<typeof environmentSchema>;

/** Zod issues -> field errors naming each faulty field (dotted paths, array indexes in brackets). */
export function fieldErrors(error: z.ZodError, prefix = ''): FieldError[] {
  const out: FieldError[] = [];
  for (const issue of error.issues) {
    const base = formatPath([...(prefix ? [prefix] : []), ...issue.path]);
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) out.push({ field: formatPath([...(prefix ? [prefix] : []), ...issue.path, key]), message: 'unknown field' });
    } else {
      out.push({ field: base || '(body)', message: issue.message });
    }
  }
  return out;
}

function formatPath(path: PropertyKey[]): string {
  return path.reduce<string>((acc, part) => {
    if (typeof part === 'number') return `${acc}[${part}]`;
    return acc ? `${acc}.${String(part)}` : String(part);
  }, '');
}

/** Parses with `schema` or throws a 400 naming every faulty field. */
export function parseOrThrow<T extends z.ZodType>(schema: T, value: unknown, prefix = ''): z.infer<T> {
  const result = schema.safeParse(value);
  if (!result.success) throw AppError.invalid(fieldErrors(result.error, prefix));
  return result.data;
}

const UNIT_SECONDS = { s: 1, m: 60, h: 3600, d: 86_400 } as const;

/**
 * A regex (no anchors) matching exactly the decimal integers from min to max, written without leading zeros:
 * bounds a schema can state in its pattern, so a document generated from it says what the server accepts.
 */
export function integerRangePattern(min: number, max: number): string {
  const alternatives: string[] = [];
  for (let digits = String(min).length; digits <= String(max).length; digits++) {
    const lo = Math.max(min, digits === 1 ? 0 : 10 ** (digits - 1));
    const hi = Math.min(max, 10 ** digits - 1);
    if (lo <= hi) alternatives.push(...sameLengthRange(String(lo), String(hi)));
  }
  return alternatives.join('|');
}

/** Alternatives matching the numbers lo..hi, both written with the same number of digits. */
function sameLengthRange(lo: string, hi: string): string[] {
  if (lo === hi) return [lo];
  const digit = (a: string, b: string) => (a === b ? a : `[${a}-${b}]`);
  if (lo.length === 1) return [digit(lo, hi)];
  const [l, h] = [lo[0]!, hi[0]!];
  const [loRest, hiRest] = [lo.slice(1), hi.slice(1)];
  if (l === h) return sameLengthRange(loRest, hiRest).map((p) => `${l}(?:${p})`);
  const n = loRest.length;
  const any = `\\d{${n}}`;
  const fullLow = loRest === '0'.repeat(n);
  const fullHigh = hiRest === '9'.repeat(n);
  const out: string[] = [];
  if (!fullLow) out.push(...sameLengthRange(loRest, '9'.repeat(n)).map((p) => `${l}(?:${p})`));
  const from = fullLow ? Number(l) : Number(l) + 1;
  const to = fullHigh ? Number(h) : Number(h) - 1;
  if (from <= to) out.push(`${digit(String(from), String(to))}${any}`);
  if (!fullHigh) out.push(...sameLengthRange('0'.repeat(n), hiRest).map((p) => `${h}(?:${p})`));
  return out;
}

/**
 * A duration `<number><unit>` (units s, m, h, d; no leading zeros) from minSeconds to maxSeconds, parsed to
 * seconds ("24h" -> 86400). The bounds are in the pattern itself, per unit.
 */
export function durationSchema(minSeconds: number, maxSeconds: number, bounds: string) {
  const message = `must look like <number><unit> (s, m, h or d), from ${bounds}`;
  const units = Object.entries(UNIT_SECONDS)
    .map(([unit, size]) => [unit, Math.ceil(minSeconds / size), Math.floor(maxSeconds / size)] as const)
    .filter(([, lo, hi]) => lo <= hi)
    .map(([unit, lo, hi]) => `(?:${integerRangePattern(lo, hi)})${unit}`);
  return z
    .string({ error: message })
    .regex(new RegExp(`^(?:${units.join('|')})$`), message)
    .transform((v) => Number(v.slice(0, -1)) * UNIT_SECONDS[v.slice(-1) as keyof typeof UNIT_SECONDS]);
}

/** An audit event kind: dot-separated lower-case words, at least two (user.login, user.password_reset.failed). */
export const EVENT_KIND = /^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$/;
