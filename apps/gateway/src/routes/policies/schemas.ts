import type { policy } from '@secsvc/proto';
import { z } from 'zod';

// Shapes only: the policy service checks the patterns and names each faulty entry (e.g. principals[2]).
const strings = z.array(z.string({ error: 'must be a string' }), { error: 'must be an array of strings' }).max(100, 'at most 100 entries');

/** `{ip: {allowlist: [...]}}`; the dotted form `{"ip.allowlist": [...]}` is accepted as a synonym. */
export const conditionsSchema = z
  .preprocess(
    (v) => {
      if (v && typeof v === 'object' && !Array.isArray(v) && 'ip.allowlist' in v) {
        const { 'ip.allowlist': allowlist, ...rest } = v as Record<string, unknown>;
        return { ...rest, ip: { allowlist } };
      }
      return v;
    },
    z.strictObject({ ip: z.strictObject({ allowlist: strings }).optional() }, { error: 'must be an object' }),
  )
  .meta({ description: 'Conditions; known: ip.allowlist (CIDRs). {} = none.' });

export const createPolicyBody = z.strictObject({
  name: z.string({ error: (i) => (i.input === undefined ? 'is required' : 'must be a string') }),
  description: z.string({ error: 'must be a string' }).optional(),
  effect: z.string({ error: (i) => (i.input === undefined ? 'is required' : 'must be a string') }),
  principals: strings,
  actions: strings,
  resources: strings,
  conditions: conditionsSchema.optional(),
});

export const updatePolicyBody = z.strictObject({
  name: z.string({ error: 'must be a string' }).optional(),
  description: z.string({ error: 'must be a string' }).optional(),
  effect: z.string({ error: 'must be a string' }).optional(),
  principals: strings.optional(),
  actions: strings.optional(),
  resources: strings.optional(),
  conditions: conditionsSchema.optional(),
});

/** At most this many draft policies per simulation (the policy service holds the same limit). */
export const MAX_DRAFTS = 100;

/** A draft policy: a POST /policies body plus an optional id (draft_<name>, or a stored policy's pol_ id). */
export const draftPolicyBody = createPolicyBody.extend({
  id: z
    .string({ error: 'must be a string' })
    .min(1, 'must not be empty')
    .max(100, 'must be at most 100 characters')
    .optional()
    .describe('draft_<name>, or a stored policy id (pol_...) to simulate a change of that policy (merge); default draft_<index>'),
});

export const simulateBody = z
  .strictObject({
    principal: z.string({ error: (i) => (i.input === undefined ? 'is required' : 'must be a string') }).max(100),
    action: z.string({ error: (i) => (i.input === undefined ? 'is required' : 'must be a string') }).max(100),
    resource: z.string({ error: (i) => (i.input === undefined ? 'is required' : 'must be a string') }).max(512),
    context: z.strictObject({ ip: z.string({ error: 'must be a string' }).max(64).optional() }, { error: 'must be an object' }).optional(),
    policies: z
      .array(draftPolicyBody, { error: 'must be an array of policies' })
      .max(MAX_DRAFTS, `at most ${MAX_DRAFTS} draft policies`)
      .optional()
      .describe('Draft policies to simulate without saving them, each validated like a POST /policies body'),
    mode: z
      .enum(['merge', 'replace'], { error: 'must be merge or replace' })
      .optional()
      .describe('merge (default): drafts plus the stored policies; replace: the drafts only. Only with policies.'),
    explain: z.boolean({ error: 'must be true or false' }).optional().describe('Explain every policy that did not match'),
  })
  .superRefine((body, ctx) => {
    if (body.mode !== undefined && body.policies === undefined) {
      ctx.addIssue({ code: 'custom', path: ['mode'], message: 'only with policies (the drafts to merge or replace with)' });
    }
  });

const timestamp = z.string().describe('ISO 8601 UTC');
const conditionsOut = z.object({ ip: z.object({ allowlist: z.array(z.string()) }).optional() });

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
  condition: z.string().optional().describe('For failed = condition: which one (ip.allowlist)'),
  expected: z.array(z.string()).describe("The policy's patterns for that part, or the condition's CIDRs"),
  actual: z
    .union([z.string(), z.array(z.string()), z.null()])
    .describe("The request's value: principal: [user:<id>, role:<name>...]; action; resource; condition: context.ip (null when none)"),
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
});

export function conditionsOf(p: policy.Policy) {
  return p.conditions?.ip ? { ip: { allowlist: p.conditions.ip.allowlist } } : {};
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

export const toProtoConditions = (c: z.infer<typeof conditionsSchema> | undefined): policy.Conditions | undefined =>
  c === undefined ? undefined : { ip: c.ip ? { allowlist: c.ip.allowlist } : undefined };
