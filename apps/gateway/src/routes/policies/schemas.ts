import type { policy } from '@secsvc/proto';
import { draftIdSchema, duplicateDraftIds, policyConditionsSchema, policyLimits, POLICY_UPDATE_EMPTY, policyShape } from '@secsvc/shared';
import { isIP } from 'node:net';
import { z } from 'zod';
import { atLeastOne, evenWithFaultyFields, integerSchema } from '../body-rules';

// The policy fields are the shared schemas of @secsvc/shared (policy-schema.ts), which the policy service
// applies too: every rule (effect, patterns, CIDRs, counts) is checked here, all faults at once, each named by
// its full path (principals[2], conditions.ip.allowlist[0], conditions.mfa.maxAgeSeconds, policies[1].effect).

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * `{ip: {allowlist: [...]}, mfa: true | {maxAgeSeconds}}`; the dotted form `{"ip.allowlist": [...]}` is accepted
 * as a synonym.
 */
export const conditionsSchema = z.preprocess((v) => {
  if (isPlainObject(v) && 'ip.allowlist' in v) {
    const { 'ip.allowlist': allowlist, ...rest } = v;
    return { ...rest, ip: { allowlist } };
  }
  return v;
}, policyConditionsSchema);

const policyBodyShape = { ...policyShape, conditions: conditionsSchema.optional() };

export const createPolicyBody = z.strictObject(policyBodyShape);

export const updatePolicyBody = atLeastOne(
  z.strictObject({
    name: policyBodyShape.name.optional(),
    description: policyBodyShape.description,
    effect: policyBodyShape.effect.optional(),
    principals: policyBodyShape.principals.optional(),
    actions: policyBodyShape.actions.optional(),
    resources: policyBodyShape.resources.optional(),
    conditions: policyBodyShape.conditions,
  }),
  POLICY_UPDATE_EMPTY,
);

/** At most this many draft policies per simulation (the policy service holds the same limit). */
export const MAX_DRAFTS = policyLimits.maxDrafts;

/** A draft policy: a POST /policies body plus an optional id (draft_<name>, or a stored policy's pol_ id). */
export const draftPolicyBody = z.strictObject({ ...policyBodyShape, id: draftIdSchema.optional() });

const requiredString = (max: number) =>
  z
    .string({ error: (i) => (i.input === undefined ? 'is required' : 'must be a string') })
    .min(1, 'must not be empty')
    .max(max, `must be at most ${max} characters`);

const MODES = ['merge', 'replace'] as const;

export const simulateBody = z
  .strictObject({
    principal: requiredString(100).regex(/^user:/, 'must look like user:<id>').describe('user:<id>'),
    action: requiredString(100),
    resource: requiredString(512),
    context: z
      .strictObject(
        {
          ip: z
            .string({ error: 'must be a string' })
            .max(64, 'must be an IPv4 or IPv6 address')
            .refine((v) => v === '' || isIP(v) !== 0, 'must be an IPv4 or IPv6 address')
            .meta({ anyOf: [{ const: '' }, { format: 'ipv4' }, { format: 'ipv6' }] })
            .optional()
            .describe('The client address to evaluate ip conditions against'),
          mfa: z
            .boolean({ error: 'must be true or false' })
            .optional()
            .describe("The user's credential carries a completed multi-factor authentication (default false), for mfa conditions"),
          mfaAgeSeconds: integerSchema(0, Number.MAX_SAFE_INTEGER, 'must be an integer of at least 0')
            .optional()
            .describe('Seconds since that MFA (default 0: just now); read only with mfa: true'),
        },
        { error: 'must be an object' },
      )
      .optional(),
    policies: z
      .array(draftPolicyBody, { error: 'must be an array of policies' })
      .max(MAX_DRAFTS, `at most ${MAX_DRAFTS} draft policies`)
      // draft ids are unique (a draft without an id is draft_<index>); checked even when a draft is at fault
      .superRefine(
        (drafts, ctx) => {
          const ids = (drafts as unknown[]).map((d) => (isPlainObject(d) ? d.id : undefined));
          for (const { index, message } of duplicateDraftIds(ids)) ctx.addIssue({ code: 'custom', path: [index, 'id'], message });
        },
        { when: (payload) => Array.isArray(payload.value) },
      )
      .optional()
      .describe('Draft policies to simulate without saving them, each validated like a POST /policies body'),
    mode: z
      .enum(MODES, { error: 'must be merge or replace' })
      .optional()
      .describe('merge (default): drafts plus the stored policies; replace: the drafts only. Only with policies.'),
    explain: z.boolean({ error: 'must be true or false' }).optional().describe('Explain every policy that did not match'),
  })
  .superRefine(
    (body, ctx) => {
      if ((MODES as readonly unknown[]).includes(body.mode) && body.policies === undefined) {
        ctx.addIssue({ code: 'custom', path: ['mode'], message: 'only with policies (the drafts to merge or replace with)' });
      }
    },
    evenWithFaultyFields,
  );

const timestamp = z.string().describe('ISO 8601 UTC');
const conditionsOut = z.object({
  ip: z.object({ allowlist: z.array(z.string()) }).optional(),
  mfa: z
    .union([z.literal(true), z.object({ maxAgeSeconds: z.number().int().optional() })])
    .optional()
    .describe('As written: true, or {maxAgeSeconds} ({} = any age)'),
});

export const policyListItem = z.object({
  id: z.string().describe('pol_<id>'),
  name: z.string(),
  effect: z.enum(['allow', 'deny']),
  principals: z.array(z.string()),
  actions: z.array(z.string()),
  resources: z.array(z.string()),
  createdAt: timestamp,
});

export const policyFull = policyListItem.extend({ description: z.string(), conditions: conditionsOut, updatedAt: timestamp });

export const explanationSchema = z.object({
  policyId: z.string().describe('pol_<id>, or a draft id'),
  name: z.string(),
  effect: z.enum(['allow', 'deny']),
  failed: z.enum(['principal', 'action', 'resource', 'condition']).describe('The first part that did not match, in this order'),
  condition: z
    .string()
    .optional()
    .describe('For failed = condition: which one: ip.allowlist, mfa (no MFA), mfa.maxAgeSeconds (an MFA, but too long ago or of unknown age)'),
  expected: z
    .array(z.string())
    .describe("The policy's patterns for that part, the condition's CIDRs, or an mfa condition's maxAgeSeconds as a decimal string ([] when it has none)"),
  actual: z
    .union([z.string(), z.array(z.string()), z.null()])
    .describe(
      "The request's value: principal: [user:<id>, role:<name>...]; action; resource; ip condition: context.ip (null when none); mfa condition: context.mfaAgeSeconds as a decimal string (null without MFA)",
    ),
});

export const simulationResult = z.object({
  allowed: z.boolean(),
  effect: z.enum(['allow', 'deny']),
  matchedPolicies: z.array(z.object({ id: z.string(), name: z.string(), effect: z.enum(['allow', 'deny']) })),
  evaluationTimeMs: z.number().int(),
  decisionId: z.string().describe('dec_<id>'),
  explanations: z
    .array(explanationSchema)
    .optional()
    .describe('With explain: the policies that did not match, drafts first, then nearest misses first; at most 100'),
  notMatchedCount: z.number().int().optional().describe('With explain: how many policies did not match'),
  mfaRequired: z
    .boolean()
    .describe('Denied, but the same request with a multi-factor authentication completed just now would be allowed (the caller would be asked to step up)'),
  mfaMaxAgeSeconds: z
    .number()
    .int()
    .describe('With mfaRequired: the smallest maxAgeSeconds of the mfa conditions that would allow it; 0 when none gives one (and without mfaRequired)'),
  reason: z
    .string()
    .describe('One line for people: "allowed by <name>", "denied by policy <name>", "denied: requires MFA" (or "... within <n> s"), "no policy allows it"'),
});

/** Conditions as the API shows them: `ip` and `mfa` when set, `mfa` in the form it was written. */
export function conditionsOf(p: policy.Policy): z.infer<typeof conditionsOut> {
  const c = p.conditions;
  const mfa = c?.mfa?.required === true ? true : c?.mfa?.options ? (c.mfa.options.maxAgeSeconds === undefined ? {} : { maxAgeSeconds: c.mfa.options.maxAgeSeconds }) : undefined;
  return { ...(c?.ip ? { ip: { allowlist: c.ip.allowlist } } : {}), ...(mfa !== undefined ? { mfa } : {}) };
}

export const policyForms = {
  listItem: (p: policy.Policy) => ({
    id: p.id,
    name: p.name,
    effect: p.effect as 'allow' | 'deny',
    principals: p.principals,
    actions: p.actions,
    resources: p.resources,
    createdAt: p.createdAt!,
  }),
  full: (p: policy.Policy) => ({ ...policyForms.listItem(p), description: p.description, conditions: conditionsOf(p), updatedAt: p.updatedAt! }),
};

/** `mfa: true` travels as `{required: true}`, an object as `{options}` (policy.proto MfaCondition). */
export const toProtoConditions = (c: z.infer<typeof conditionsSchema> | undefined): policy.Conditions | undefined =>
  c === undefined
    ? undefined
    : {
        ip: c.ip ? { allowlist: c.ip.allowlist } : undefined,
        mfa: c.mfa === undefined ? undefined : c.mfa === true ? { required: true } : { options: c.mfa.maxAgeSeconds === undefined ? {} : { maxAgeSeconds: c.mfa.maxAgeSeconds } },
      };
