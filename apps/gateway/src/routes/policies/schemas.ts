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

export const simulateBody = z.strictObject({
  principal: z.string({ error: (i) => (i.input === undefined ? 'is required' : 'must be a string') }).max(100),
  action: z.string({ error: (i) => (i.input === undefined ? 'is required' : 'must be a string') }).max(100),
  resource: z.string({ error: (i) => (i.input === undefined ? 'is required' : 'must be a string') }).max(512),
  context: z.strictObject({ ip: z.string({ error: 'must be a string' }).max(64).optional() }, { error: 'must be an object' }).optional(),
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

export const simulationResult = z.object({
  allowed: z.boolean(),
  effect: z.enum(['allow', 'deny']),
  matchedPolicies: z.array(z.object({ id: z.string(), name: z.string(), effect: z.enum(['allow', 'deny']) })),
  evaluationTimeMs: z.number().int(),
  decisionId: z.string().describe('dec_<id>'),
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
