// What the policy editor and its simulator send: the form's text (lists one entry a line, conditions as JSON)
// read into a POST/PATCH body, and the simulate request that tries the current draft before it is saved. No
// rule of the API is repeated here: the API names every faulty entry (principals[1], conditions.ip.allowlist[0],
// policies[0].actions[2], context.ip) and the pages show its messages next to the fields.
import type { operations, Schemas } from '@secsvc/client';
import { ApiError, type FieldDetail } from '../../api/errors';
import { formatJson, parseJsonText } from '../../forms';

export type Policy = Schemas['Policy'];
export type SimulationResult = Schemas['SimulationResult'];
export type CreatePolicyBody = NonNullable<operations['createPolicy']['requestBody']>['content']['application/json'];
export type UpdatePolicyBody = NonNullable<operations['updatePolicy']['requestBody']>['content']['application/json'];
export type SimulateBody = NonNullable<operations['simulatePolicies']['requestBody']>['content']['application/json'];
export type DraftPolicy = NonNullable<SimulateBody['policies']>[number];
type Conditions = CreatePolicyBody['conditions'];

/** The editor's inputs as typed. */
export interface PolicyFormValues {
  name: string;
  description: string;
  effect: 'allow' | 'deny';
  /** One entry a line. */
  principals: string;
  actions: string;
  resources: string;
  /** JSON text; empty means no conditions. */
  conditions: string;
}

/** The fields of the editor, as the API names them (the root of a detail's path). */
export const POLICY_FIELDS = ['name', 'description', 'effect', 'principals', 'actions', 'resources', 'conditions'] as const;

export const EMPTY_POLICY: PolicyFormValues = { name: '', description: '', effect: 'allow', principals: '', actions: '', resources: '', conditions: '{}' };

/**
 * A list typed one entry a line: each line trimmed, blank lines dropped. Only lines separate entries (a
 * resource path may hold a comma or anything else the API accepts), so the API's index names the line.
 */
export function parseList(text: string): string[] {
  return text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter(Boolean);
}

export const formatList = (entries: readonly string[]) => entries.join('\n');

/** A stored policy as the editor shows it. */
export function formValuesOf(policy: Policy): PolicyFormValues {
  return {
    name: policy.name,
    description: policy.description,
    effect: policy.effect,
    principals: formatList(policy.principals),
    actions: formatList(policy.actions),
    resources: formatList(policy.resources),
    conditions: formatJson(policy.conditions ?? {}),
  };
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; message: string };

/** The conditions textarea: a JSON value (empty = `{}`), or the parser's message. */
export function parseConditions(text: string): Parsed<Conditions> {
  const parsed = parseJsonText(text);
  // any JSON value: the API names what it refuses (conditions.ip.allowlist[0], conditions.mfa, ...)
  return parsed.ok ? { ok: true, value: parsed.value as Conditions } : parsed;
}

/** The POST /v1/policies body of the form (description only when given), or why it cannot be sent. */
export function createBody(values: PolicyFormValues): Parsed<CreatePolicyBody> {
  const conditions = parseConditions(values.conditions);
  if (!conditions.ok) return conditions;
  return {
    ok: true,
    value: {
      name: values.name,
      ...(values.description !== '' ? { description: values.description } : {}),
      effect: values.effect,
      principals: parseList(values.principals),
      actions: parseList(values.actions),
      resources: parseList(values.resources),
      conditions: conditions.value,
    },
  };
}

const sameList = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((v, i) => v === b[i]);

/** Equal JSON values, whatever the order of object keys. */
export function sameJson(a: unknown, b: unknown): boolean {
  if (Array.isArray(a) || Array.isArray(b)) return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((v, i) => sameJson(v, b[i]));
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    const ka = Object.keys(a);
    const kb = Object.keys(b);
    return ka.length === kb.length && ka.every((k) => k in b && sameJson((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
  }
  return a === b;
}

/**
 * The PATCH /v1/policies/{id} body: only what changed (arrays and conditions replace the stored value as a
 * whole, so a changed list is sent entire); `{}` when nothing changed.
 */
export function changesOf(policy: Policy, values: PolicyFormValues): Parsed<UpdatePolicyBody> {
  const next = createBody(values);
  if (!next.ok) return next;
  const v = next.value;
  const body: UpdatePolicyBody = {};
  if (v.name !== policy.name) body.name = v.name;
  if ((v.description ?? '') !== policy.description) body.description = v.description ?? '';
  if (v.effect !== policy.effect) body.effect = v.effect;
  if (!sameList(v.principals, policy.principals)) body.principals = v.principals;
  if (!sameList(v.actions, policy.actions)) body.actions = v.actions;
  if (!sameList(v.resources, policy.resources)) body.resources = v.resources;
  if (!sameJson(v.conditions ?? {}, policy.conditions ?? {})) body.conditions = v.conditions;
  return { ok: true, value: body };
}

/**
 * The policy being edited as a draft of the simulator: the POST body plus, for a stored policy, its id (the
 * draft then stands in for it under merge: "what if I saved this?"); a new policy is `draft_0`.
 */
export function draftOf(values: PolicyFormValues, storedId?: string): Parsed<DraftPolicy> {
  const body = createBody(values);
  if (!body.ok) return body;
  return { ok: true, value: { ...(storedId ? { id: storedId } : {}), ...body.value } };
}

/** What the simulator is asked to evaluate: the draft with the stored policies, the draft alone, or the stored policies only. */
export type SimulationMode = 'merge' | 'replace' | 'stored';

/** The simulator's inputs as typed. */
export interface SimulatorValues {
  /** user:<id>, sent as typed. */
  principal: string;
  action: string;
  resource: string;
  /** Empty: no ip (an ip condition then fails). */
  ip: string;
  mfa: boolean;
  /** Seconds since that MFA; empty: the API's default (0, just now). */
  mfaAgeSeconds: string;
  mode: SimulationMode;
}

export const EMPTY_SIMULATOR: SimulatorValues = { principal: '', action: '', resource: '', ip: '', mfa: false, mfaAgeSeconds: '', mode: 'merge' };

/**
 * The POST /v1/policies/simulate body: the inputs as typed (the API judges them), the context only with what
 * was given, always `explain: true` (why each other policy did not match), and the draft unless the stored
 * policies alone are asked for.
 */
export function simulateBody(sim: SimulatorValues, draft: DraftPolicy | undefined): SimulateBody {
  const context: NonNullable<SimulateBody['context']> = {};
  if (sim.ip !== '') context.ip = sim.ip;
  if (sim.mfa) {
    context.mfa = true;
    // a number the API checks (an integer of at least 0); anything else is sent for it to name
    if (sim.mfaAgeSeconds.trim() !== '') context.mfaAgeSeconds = Number(sim.mfaAgeSeconds);
  }
  const withDraft = sim.mode !== 'stored' && draft !== undefined;
  return {
    principal: sim.principal,
    action: sim.action,
    resource: sim.resource,
    ...(Object.keys(context).length ? { context } : {}),
    ...(withDraft ? { policies: [draft], mode: sim.mode as 'merge' | 'replace' } : {}),
    explain: true,
  };
}

/** The simulator's own fields, as the API names them in details. */
export const SIMULATOR_FIELDS = ['principal', 'action', 'resource', 'context.ip', 'context.mfa', 'context.mfaAgeSeconds'] as const;

/**
 * The details of a simulate error: those about the simulator's fields (by field), those about the draft
 * (`policies[0].principals[1]`, by the editor field they name: principals), and all the others.
 */
export function simulationDetails(error: unknown): { simulator: Map<string, FieldDetail[]>; draft: Map<string, FieldDetail[]>; rest: FieldDetail[] } {
  const simulator = new Map<string, FieldDetail[]>();
  const draft = new Map<string, FieldDetail[]>();
  const rest: FieldDetail[] = [];
  if (!(error instanceof ApiError)) return { simulator, draft, rest };
  const add = (map: Map<string, FieldDetail[]>, key: string, d: FieldDetail) => map.set(key, [...(map.get(key) ?? []), d]);
  for (const d of error.details) {
    const own = SIMULATOR_FIELDS.find((f) => d.field === f || d.field.startsWith(`${f}.`) || d.field.startsWith(`${f}[`));
    const inDraft = /^policies\[0\]\.([A-Za-z]+)/.exec(d.field);
    if (own) add(simulator, own, d);
    else if (d.field === 'context') add(simulator, 'context.ip', d);
    else if (inDraft && (POLICY_FIELDS as readonly string[]).includes(inDraft[1]!)) {
      add(draft, inDraft[1]!, d);
      rest.push(d);
    } else rest.push(d);
  }
  return { simulator, draft, rest };
}

/** Maps of details merged field by field. */
export function mergeDetails(...maps: Map<string, FieldDetail[]>[]): Map<string, FieldDetail[]> {
  const out = new Map<string, FieldDetail[]>();
  for (const map of maps) for (const [k, list] of map) out.set(k, [...(out.get(k) ?? []), ...list]);
  return out;
}

/** How a matched or explained policy is named: a draft of this request, the policy being edited, or a stored one. */
export function policyKind(id: string, editedId?: string): 'draft' | 'edited' | 'stored' {
  if (editedId && id === editedId) return 'edited';
  return id.startsWith('draft_') ? 'draft' : 'stored';
}

/** An explanation's `actual` as one line: the principal's patterns joined, or `(none)` for null. */
export function formatActual(actual: string | string[] | null): string {
  if (actual === null) return '(none)';
  return Array.isArray(actual) ? actual.join(', ') : actual;
}

/** An explanation's `expected` as one line; `(no bound)` for the empty list of an mfa condition without a maximum age. */
export const formatExpected = (expected: readonly string[]) => (expected.length ? expected.join(', ') : '(no bound)');

/** What part failed, in words: `condition ip.allowlist`. */
export const formatFailed = (failed: string, condition?: string) => (condition ? `${failed} ${condition}` : failed);
