import { isIP } from 'node:net';
import {
  AppError,
  duplicateDraftIds,
  draftIdSchema,
  fieldErrors,
  isId,
  policyChangesSchema,
  policyFieldsSchema,
  policyLimits,
  POLICY_UPDATE_EMPTY,
  type FieldError,
} from '@secsvc/shared';
import type { AuthzRequest, Effect, EnginePolicy, PolicyConditions, SimulationDrafts } from '../engine';

// Input rules of a policy (issue 5, README "Limits"). The rules themselves are the shared zod schemas of
// @secsvc/shared (policy-schema.ts), which the gateway applies to the JSON bodies too, so both ends enforce
// the same rules; every error names its field (`principals[2]`, `conditions.ip.allowlist[0]`), and all
// errors of one input are reported together.

export { actionError, cidrError, policyLimits, principalError, resourceError } from '@secsvc/shared';

export interface PolicyFields {
  name: string;
  description: string;
  effect: Effect;
  principals: string[];
  actions: string[];
  resources: string[];
  /** `{}`, or `ip: { allowlist }` and/or `mfa: true | { maxAgeSeconds? }` (as written). */
  conditions: PolicyConditions;
}

export type PolicyChanges = Partial<PolicyFields>;

/** Collects every error of one input; a scoped view names its fields under a prefix (`policies[1].`). */
class Collector {
  constructor(
    readonly errors: FieldError[] = [],
    private readonly prefix = '',
  ) {}
  add(field: string, message: string): void {
    this.errors.push({ field: `${this.prefix}${field}`, message });
  }
  addAll(error: Parameters<typeof fieldErrors>[0]): void {
    for (const e of fieldErrors(error)) this.add(e.field, e.message);
  }
  scoped(prefix: string): Collector {
    return new Collector(this.errors, `${this.prefix}${prefix}`);
  }
  throwIfAny(): void {
    if (this.errors.length) throw AppError.invalid(this.errors);
  }
}

/** The fields of a new policy (or a draft), with every error added to `out` (undefined when any). */
function checkCreate(input: PolicyInput, out: Collector): PolicyFields | undefined {
  const result = policyFieldsSchema.safeParse(input);
  if (!result.success) return out.addAll(result.error), undefined;
  const { description, conditions, ...rest } = result.data;
  return { ...rest, description: description ?? '', conditions: conditions ?? {} };
}

export interface PolicyInput {
  name?: unknown;
  description?: unknown;
  effect?: unknown;
  principals?: unknown;
  actions?: unknown;
  resources?: unknown;
  conditions?: unknown;
}

/** A new policy: every field but description (default "") and conditions (default {}) is required. */
export function validateCreate(input: PolicyInput): PolicyFields {
  const out = new Collector();
  const fields = checkCreate(input, out);
  out.throwIfAny();
  return fields!;
}

/**
 * A change: any subset of the fields; a present field replaces the stored value as a whole (arrays and
 * conditions included: `conditions: {}` removes every condition). No field at all is an error.
 */
export function validateUpdate(input: PolicyInput): PolicyChanges {
  const result = policyChangesSchema.safeParse(input);
  if (!result.success) throw AppError.invalid(fieldErrors(result.error));
  const changes = Object.fromEntries(Object.entries(result.data).filter(([, v]) => v !== undefined)) as PolicyChanges;
  if (Object.keys(changes).length === 0) throw AppError.invalid([{ field: '(body)', message: POLICY_UPDATE_EMPTY }]);
  return changes;
}

export interface SimulationInput {
  userId: string;
  action: string;
  resource: string;
  ip?: string;
  /** The caller's credential carries a completed MFA this many seconds old; absent: no MFA. */
  mfa?: { ageSeconds: number };
  roles: string[];
  /** Draft policies (never stored) and how they combine with the stored ones; absent: stored only. */
  drafts?: SimulationDrafts;
  /** Explain every policy that did not match. */
  explain: boolean;
}

export const simulationLimits = { actionMaxLength: 256, resourceMaxLength: 8192, maxRoles: 100, maxDrafts: policyLimits.maxDrafts } as const;

export interface SimulationRequestInput {
  principal: string;
  action: string;
  resource: string;
  ip: string;
  /** The credential carries a completed MFA (default false), `mfaAgeSeconds` ago (an integer >= 0, default 0). */
  mfa?: boolean;
  mfaAgeSeconds?: number;
  roles: string[];
  /** Draft policies, validated like CreatePolicy bodies; errors name `policies[<i>].<field>`. */
  policies?: readonly (PolicyInput & { id?: unknown })[];
  /** `merge` (also when empty) or `replace`. */
  mode?: string;
  explain?: boolean;
}

/**
 * Drafts: each validated like a new policy (errors named `policies[<i>].<field>`), with the id it gives
 * (`draft_<name>` or `pol_...`) or `draft_<index>`; ids are unique within the request.
 */
function checkDrafts(input: SimulationRequestInput, out: Collector): SimulationDrafts | undefined {
  const mode = input.mode || 'merge';
  if (mode !== 'merge' && mode !== 'replace') out.add('mode', 'must be merge or replace');
  const drafts = input.policies ?? [];
  if (drafts.length > simulationLimits.maxDrafts) {
    out.add('policies', `must have at most ${simulationLimits.maxDrafts} entries`);
    return undefined;
  }
  const duplicates = new Map(duplicateDraftIds(drafts.map((d) => d.id)).map((d) => [d.index, d.message]));
  const policies: EnginePolicy[] = [];
  drafts.forEach((draft, i) => {
    const scoped = out.scoped(`policies[${i}].`);
    const fields = checkCreate(draft, scoped);
    let id = `draft_${i}`;
    if (draft.id !== undefined && draft.id !== '') {
      const given = draftIdSchema.safeParse(draft.id);
      if (!given.success) for (const issue of given.error.issues) scoped.add('id', issue.message);
      else id = given.data;
    }
    const duplicate = duplicates.get(i);
    if (duplicate) scoped.add('id', duplicate);
    // description is validated like a stored policy's, but takes no part in a decision
    if (fields) {
      const { description: _description, ...decisive } = fields;
      policies.push({ id, ...decisive });
    }
  });
  return mode === 'merge' || mode === 'replace' ? { mode, policies } : undefined;
}

/**
 * A simulated request: principal `user:<id>`, non-empty action and resource, an optional ip address, whether
 * the credential carries a completed MFA and its age (an integer >= 0, read only with mfa); for simulations
 * also draft policies with their mode, and whether to explain.
 */
export function validateSimulation(input: SimulationRequestInput): SimulationInput {
  const out = new Collector();
  const userId = input.principal.startsWith('user:') ? input.principal.slice(5) : '';
  if (!isId('user', userId)) out.add('principal', 'must be user:<user id>');
  if (input.action.length === 0) out.add('action', 'must not be empty');
  else if (input.action.length > simulationLimits.actionMaxLength) out.add('action', `must be at most ${simulationLimits.actionMaxLength} characters`);
  if (input.resource.length === 0) out.add('resource', 'must not be empty');
  else if (input.resource.length > simulationLimits.resourceMaxLength) {
    out.add('resource', `must be at most ${simulationLimits.resourceMaxLength} characters`);
  }
  if (input.ip !== '' && isIP(input.ip) === 0) out.add('ip', 'must be an IPv4 or IPv6 address');
  const mfaAgeSeconds = input.mfaAgeSeconds ?? 0;
  if (!Number.isSafeInteger(mfaAgeSeconds) || mfaAgeSeconds < 0) out.add('mfaAgeSeconds', 'must be an integer of at least 0');
  if (input.roles.length > simulationLimits.maxRoles) out.add('roles', `must have at most ${simulationLimits.maxRoles} entries`);
  const withDrafts = (input.policies !== undefined && input.policies.length > 0) || (input.mode !== undefined && input.mode !== '');
  const drafts = withDrafts ? checkDrafts(input, out) : undefined;
  out.throwIfAny();
  return {
    userId,
    action: input.action,
    resource: input.resource,
    ip: input.ip || undefined,
    ...(input.mfa === true ? { mfa: { ageSeconds: mfaAgeSeconds } } : {}),
    roles: input.roles,
    ...(drafts ? { drafts } : {}),
    explain: input.explain === true,
  };
}

/** The engine's request context of a validated request: the ip when known, the MFA and its age when there is one. */
export function requestContext(input: Pick<SimulationInput, 'ip' | 'mfa'>): NonNullable<AuthzRequest['context']> {
  return {
    ...(input.ip === undefined ? {} : { ip: input.ip }),
    ...(input.mfa ? { mfa: true, mfaAgeSeconds: input.mfa.ageSeconds } : {}),
  };
}
