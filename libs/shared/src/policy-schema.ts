import { BlockList, isIP } from 'node:net';
import { z } from 'zod';
import { isId } from './ids';
import { NOT_BLANK } from './validation';

// The input rules of an access policy (README "Limits", "Policies"), as ONE set of zod schemas: the gateway
// validates POST/PATCH /v1/policies and the drafts of POST /v1/policies/simulate with them (reporting every
// fault at once, each named by its full path: `principals[2]`, `conditions.ip.allowlist[0]`,
// `policies[1].effect`), the policy service validates its gRPC requests with the same schemas, and the
// OpenAPI document is generated from them.

export const policyLimits = {
  nameMaxLength: 200,
  descriptionMaxLength: 2000,
  /** principals, actions, resources and conditions.ip.allowlist each hold at most this many entries. */
  maxEntries: 100,
  resourceMaxLength: 512,
  maxPoliciesPerEnvironment: 10_000,
  /** Draft policies in one simulation. */
  maxDrafts: 100,
  /** conditions.mfa.maxAgeSeconds: 1 second to 365 days. */
  mfaMaxAgeSeconds: 31_536_000,
} as const;

export const POLICY_EFFECTS = ['allow', 'deny'] as const;
export type PolicyEffect = (typeof POLICY_EFFECTS)[number];

/**
 * The mfa condition as written: `true`, or an object with an optional `maxAgeSeconds` (`{}` is the same as
 * `true`). It holds when the caller's credential carries a completed MFA, at most maxAgeSeconds old.
 */
export type MfaConditionValue = true | { maxAgeSeconds?: number };

/** `{}` (no condition), an ip allowlist of CIDRs, an mfa condition, or both. */
export interface PolicyConditionsValue {
  ip?: { allowlist: string[] };
  mfa?: MfaConditionValue;
}

const ROLE_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;
const ACTION = /^[a-z][a-z0-9:_.-]{0,63}$/;
const SELF = '${self}';
// eslint-disable-next-line no-control-regex -- control characters are exactly what this rejects
const WHITESPACE_OR_CONTROL = /[\s\u0000-\u001f\u007f]/;

/** Why a principal pattern is invalid, or undefined when it is valid. */
export function principalError(value: string): string | undefined {
  if (value === '*' || value === `user:${SELF}`) return undefined;
  if (value.startsWith('role:')) {
    return ROLE_NAME.test(value.slice(5))
      ? undefined
      : 'role:<name>: the name is 1 to 63 characters of a-z, 0-9, _ and -, starting with a letter or digit';
  }
  if (value.startsWith('user:')) {
    return isId('user', value.slice(5)) ? undefined : 'user:<id> needs a user id (user_ and 26 characters) or ${self}';
  }
  return 'must be role:<name>, user:<id>, user:${self} or *';
}

/** Why an action is invalid, or undefined. */
export function actionError(value: string): string | undefined {
  if (value === '*' || ACTION.test(value)) return undefined;
  return 'must be * or a name of 1 to 64 characters: a-z first, then a-z, 0-9, :, _, . and -';
}

/** Why a resource pattern is invalid, or undefined. */
export function resourceError(value: string): string | undefined {
  if (value === '*') return undefined;
  if (value.length > policyLimits.resourceMaxLength) return `must be at most ${policyLimits.resourceMaxLength} characters`;
  if (!value.startsWith('/')) return 'must be * or an absolute path starting with /';
  if (WHITESPACE_OR_CONTROL.test(value)) return 'must not contain whitespace or control characters';
  const path = value.endsWith('/*') ? value.slice(0, -2) : value;
  if (path === '') return undefined; // "/*": everything below the root
  for (const segment of path.slice(1).split('/')) {
    if (segment === '') return 'must not contain empty path segments';
    if (segment === SELF) continue;
    if (segment.includes('*')) return 'the only wildcard is a final /* (or * alone)';
    if (/[${}]/.test(segment)) return '${self} must stand as a whole path segment ($, { and } only there)';
  }
  return undefined;
}

// IPv4-mapped IPv6 addresses (::ffff:0:0/96). The engine reads a client address `::ffff:a.b.c.d` as the
// IPv4 address a.b.c.d and keeps the families apart, so a CIDR written in this range never matches anyone.
const ipv4Mapped = new BlockList();
ipv4Mapped.addSubnet('::ffff:0:0', 96, 'ipv6');

/**
 * Why a CIDR is invalid, or undefined. `address/prefix` with an IPv4 or IPv6 address (no zone) and a decimal
 * prefix length (0-32 or 0-128). Host bits are accepted and ignored, as `net.cidr_contains` does:
 * `10.1.2.3/8` is `10.0.0.0/8`. The value is stored as given.
 */
export function cidrError(value: string): string | undefined {
  const slash = value.indexOf('/');
  if (slash < 0) return 'must be a CIDR such as 10.0.0.0/8 or 2001:db8::/32';
  const address = value.slice(0, slash);
  const prefix = value.slice(slash + 1);
  const family = isIP(address);
  if (family === 0 || address.includes('%')) return 'must be a CIDR with a valid IPv4 or IPv6 address';
  const max = family === 4 ? 32 : 128;
  if (!/^(0|[1-9][0-9]{0,2})$/.test(prefix) || Number(prefix) > max) return `the prefix length must be 0 to ${max}`;
  if (family === 6 && ipv4Mapped.check(address, 'ipv6')) {
    return 'write IPv4 ranges in IPv4 form (an IPv4-mapped IPv6 range matches no client)';
  }
  return undefined;
}

/** Ids a draft may carry: `draft_<name>`, or a policy id (under merge the draft stands in for that policy). */
export const DRAFT_ID = /^draft_[a-z0-9_-]{1,64}$/;

/** Why a draft id is invalid, or undefined. */
export function draftIdError(value: string): string | undefined {
  if (DRAFT_ID.test(value) || isId('pol', value)) return undefined;
  return 'must be draft_<name> (a-z, 0-9, _ and -, at most 64) or the id of a stored policy (pol_...)';
}

/**
 * The id each draft stands for (its own when valid, else `draft_<index>`), and a message for each draft whose id an
 * earlier one already took. Drafts whose id is not a string are skipped (their type is reported elsewhere).
 */
export function duplicateDraftIds(ids: readonly unknown[]): { index: number; message: string }[] {
  const seen = new Set<string>();
  const out: { index: number; message: string }[] = [];
  ids.forEach((given, index) => {
    if (given !== undefined && given !== '' && typeof given !== 'string') return;
    const id = typeof given === 'string' && given !== '' && !draftIdError(given) ? given : `draft_${index}`;
    if (seen.has(id)) out.push({ index, message: `duplicate id ${id} (a draft without an id is draft_<its index>)` });
    seen.add(id);
  });
  return out;
}

const requiredOr = (message: string) => (issue: { input?: unknown }) => (issue.input === undefined ? 'is required' : message);

/**
 * A string checked by one of the `*Error` functions above (its message becomes the issue's). `pattern`, when
 * the rule is a regular language, states the same rule in the OpenAPI document (policy-schema.spec.ts holds
 * the two together).
 */
function checkedString(check: (value: string) => string | undefined, description: string, pattern?: RegExp, maxLength?: number) {
  return z
    .string({ error: 'must be a string' })
    .superRefine((value, ctx) => {
      const message = check(value);
      if (message) ctx.addIssue({ code: 'custom', message });
    })
    .meta({ description, ...(pattern ? { pattern: pattern.source } : {}), ...(maxLength ? { maxLength } : {}) });
}

/** A non-empty list of at most `maxEntries` entries, each named by its index when it is at fault. */
function entryList(check: (value: string) => string | undefined, description: string, pattern?: RegExp, maxLength?: number) {
  return z
    .array(checkedString(check, description, pattern, maxLength), { error: requiredOr('must be an array of strings') })
    .min(1, 'must not be empty')
    .max(policyLimits.maxEntries, `must have at most ${policyLimits.maxEntries} entries`);
}

export const policyNameSchema = z
  .string({ error: requiredOr('must be a string') })
  .max(policyLimits.nameMaxLength, `must be at most ${policyLimits.nameMaxLength} characters`)
  .regex(NOT_BLANK, 'must not be empty');

const ID_CHARS = '[0-9abcdefghjkmnpqrstvwxyz]{26}';
// JavaScript's \s and the control characters, spelled out (other regex engines read \s differently).
const SEGMENT_CHAR = '[^/*${}\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff\\u0000-\\u001f\\u007f]';
/** The rules of principalError, actionError, resourceError and draftIdError as regular expressions. */
export const POLICY_PATTERNS = {
  principal: new RegExp(`^(?:\\*|user:\\$\\{self\\}|role:[a-z0-9][a-z0-9_-]{0,62}|user:user_${ID_CHARS})$`),
  action: /^(?:\*|[a-z][a-z0-9:_.-]{0,63})$/,
  resource: new RegExp(`^(?:\\*|/\\*|(?:/(?:\\$\\{self\\}|${SEGMENT_CHAR}+))+(?:/\\*)?)$`),
  draftId: new RegExp(`^(?:draft_[a-z0-9_-]{1,64}|pol_${ID_CHARS})$`),
};

export const policyDescriptionSchema = z
  .string({ error: 'must be a string' })
  .max(policyLimits.descriptionMaxLength, `must be at most ${policyLimits.descriptionMaxLength} characters`);

export const policyEffectSchema = z.enum(POLICY_EFFECTS, { error: requiredOr('must be allow or deny') });

export const principalsSchema = entryList(principalError, 'role:<name>, user:<id>, user:${self} or *', POLICY_PATTERNS.principal);
export const actionsSchema = entryList(actionError, '* or a name: a-z first, then a-z, 0-9, :, _, . and - (at most 64)', POLICY_PATTERNS.action);
export const resourcesSchema = entryList(
  resourceError,
  `* or an absolute path (at most ${policyLimits.resourceMaxLength} characters); segments may be \${self}; a final /* matches below`,
  POLICY_PATTERNS.resource,
  policyLimits.resourceMaxLength,
);
export const cidrListSchema = entryList(cidrError, 'A CIDR, e.g. 10.0.0.0/8 or 2001:db8::/32');

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

const MFA_MAX_AGE_MESSAGE = `must be an integer from 1 to ${policyLimits.mfaMaxAgeSeconds}`;

// What the document shows for conditions (the checks below are written out so that the unknown keys are
// named first, then the allowlist's entries and the mfa fields, each by its full path).
const { $schema: _dialect, ...conditionsDoc } = z.toJSONSchema(
  z
    .strictObject({
      ip: z.strictObject({ allowlist: z.array(z.string()).min(1).max(policyLimits.maxEntries) }).nullable().optional(),
      mfa: z
        .union([
          z.literal(true),
          z.strictObject({
            maxAgeSeconds: z
              .number()
              .int()
              .min(1)
              .max(policyLimits.mfaMaxAgeSeconds)
              .optional()
              .describe('The MFA was completed at most this many seconds before the request; absent: any age'),
          }),
        ])
        .nullable()
        .optional()
        .describe('The credential carries a completed multi-factor authentication: true, or {maxAgeSeconds} to also bound its age'),
    })
    .nullable(),
  { io: 'input' },
);

const CONDITION_KEYS = new Set(['ip', 'mfa']);

/**
 * Conditions: absent, null or `{}` is no condition; the known keys are `ip`, whose only key is `allowlist`, a
 * non-empty array of CIDRs, and `mfa`: `true`, or an object whose only key is the optional `maxAgeSeconds`,
 * an integer from 1 to 31536000 (`false` and any other form are refused). A key whose value is undefined
 * counts as absent (a decoded protobuf message carries `ip: undefined` when the field is not set), and so
 * does a null `ip` or `mfa`. The output holds `ip: {allowlist}` and `mfa` (as written) when given.
 */
export const policyConditionsSchema = z
  .unknown()
  .superRefine((value, ctx) => {
    if (value === undefined || value === null) return;
    if (!isPlainObject(value)) {
      ctx.addIssue({ code: 'custom', message: 'must be an object' });
      return;
    }
    for (const key of Object.keys(value)) {
      if (!CONDITION_KEYS.has(key) && value[key] !== undefined) ctx.addIssue({ code: 'custom', path: [key], message: 'unknown condition (the conditions are ip and mfa)' });
    }
    checkIpCondition(value.ip, ctx);
    checkMfaCondition(value.mfa, ctx);
  })
  .transform((value): PolicyConditionsValue => {
    if (!isPlainObject(value)) return {};
    const ip = isPlainObject(value.ip) ? { allowlist: value.ip.allowlist as string[] } : undefined;
    const mfa = value.mfa === true ? true : isPlainObject(value.mfa) ? mfaOptions(value.mfa) : undefined;
    return { ...(ip ? { ip } : {}), ...(mfa !== undefined ? { mfa } : {}) };
  })
  .meta({ ...conditionsDoc, description: 'Conditions; known: ip.allowlist (CIDRs) and mfa (true or {maxAgeSeconds}). {} = none.' });

type IssueSink = z.RefinementCtx<unknown>;

function checkIpCondition(ip: unknown, ctx: IssueSink): void {
  if (ip === undefined || ip === null) return;
  if (!isPlainObject(ip)) {
    ctx.addIssue({ code: 'custom', path: ['ip'], message: 'must be an object with an allowlist' });
    return;
  }
  for (const key of Object.keys(ip)) {
    if (key !== 'allowlist' && ip[key] !== undefined) ctx.addIssue({ code: 'custom', path: ['ip', key], message: 'unknown field (the only field is allowlist)' });
  }
  const allowlist = cidrListSchema.safeParse(ip.allowlist);
  if (!allowlist.success) {
    for (const issue of allowlist.error.issues) ctx.addIssue({ code: 'custom', path: ['ip', 'allowlist', ...issue.path], message: issue.message });
  }
}

function checkMfaCondition(mfa: unknown, ctx: IssueSink): void {
  if (mfa === undefined || mfa === null || mfa === true) return;
  if (!isPlainObject(mfa)) {
    ctx.addIssue({ code: 'custom', path: ['mfa'], message: 'must be true or an object with an optional maxAgeSeconds' });
    return;
  }
  for (const key of Object.keys(mfa)) {
    if (key !== 'maxAgeSeconds' && mfa[key] !== undefined) ctx.addIssue({ code: 'custom', path: ['mfa', key], message: 'unknown field (the only field is maxAgeSeconds)' });
  }
  const max = mfa.maxAgeSeconds;
  if (max !== undefined && !(typeof max === 'number' && Number.isInteger(max) && max >= 1 && max <= policyLimits.mfaMaxAgeSeconds)) {
    ctx.addIssue({ code: 'custom', path: ['mfa', 'maxAgeSeconds'], message: MFA_MAX_AGE_MESSAGE });
  }
}

/** The object form as written: `{}` or `{maxAgeSeconds}` (a key whose value is undefined is absent). */
function mfaOptions(mfa: Record<string, unknown>): { maxAgeSeconds?: number } {
  return mfa.maxAgeSeconds === undefined ? {} : { maxAgeSeconds: mfa.maxAgeSeconds as number };
}

/** The fields of a policy (a POST /v1/policies body); description and conditions are optional. */
export const policyShape = {
  name: policyNameSchema,
  description: policyDescriptionSchema.optional(),
  effect: policyEffectSchema,
  principals: principalsSchema,
  actions: actionsSchema,
  resources: resourcesSchema,
  conditions: policyConditionsSchema.optional(),
};

/** A draft's id: `draft_<name>` or a stored policy's id. */
export const draftIdSchema = checkedString(
  (v) => (v === '' ? 'must not be empty' : draftIdError(v)),
  'draft_<name>, or a stored policy id (pol_...) to simulate a change of that policy (merge); default draft_<index>',
  POLICY_PATTERNS.draftId,
);

/** A change names at least one field; the message of the refusal. */
export const POLICY_UPDATE_EMPTY = 'give at least one of name, description, effect, principals, actions, resources, conditions';

/** The policy fields as given in a gRPC request or a JSON body; unknown keys are the caller's concern. */
export const policyFieldsSchema = z.object(policyShape);

/** A change: any subset of the fields (an undefined field is absent). */
export const policyChangesSchema = z.object({
  name: policyNameSchema.optional(),
  description: policyDescriptionSchema.optional(),
  effect: policyEffectSchema.optional(),
  principals: principalsSchema.optional(),
  actions: actionsSchema.optional(),
  resources: resourcesSchema.optional(),
  conditions: policyConditionsSchema.optional(),
});
