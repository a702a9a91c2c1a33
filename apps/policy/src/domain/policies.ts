import { BlockList, isIP } from 'node:net';
import { AppError, isId, type FieldError } from '@secsvc/shared';
import type { Effect, EnginePolicy, PolicyConditions, SimulationDrafts } from '../engine';

// Input rules of a policy (issue 5, README "Limits"). Pure functions over untyped values, so the same rules
// serve the gRPC requests here and any JSON body; every error names its field (`principals[2]`,
// `conditions.ip.allowlist[0]`), and all errors of one input are reported together.

export const policyLimits = {
  nameMaxLength: 200,
  descriptionMaxLength: 2000,
  /** principals, actions, resources and conditions.ip.allowlist each hold at most this many entries. */
  maxEntries: 100,
  resourceMaxLength: 512,
  maxPoliciesPerEnvironment: 10_000,
} as const;

export interface PolicyFields {
  name: string;
  description: string;
  effect: Effect;
  principals: string[];
  actions: string[];
  resources: string[];
  /** `{}` or `{ ip: { allowlist } }`. */
  conditions: PolicyConditions;
}

export type PolicyChanges = Partial<PolicyFields>;

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
    if (segment.includes(SELF)) return '${self} must stand as a whole path segment';
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

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Collects every error of one input; a scoped view names its fields under a prefix (`policies[1].`). */
class Collector {
  constructor(
    readonly errors: FieldError[] = [],
    private readonly prefix = '',
  ) {}
  add(field: string, message: string): void {
    this.errors.push({ field: `${this.prefix}${field}`, message });
  }
  scoped(prefix: string): Collector {
    return new Collector(this.errors, `${this.prefix}${prefix}`);
  }
  throwIfAny(): void {
    if (this.errors.length) throw AppError.invalid(this.errors);
  }
}

function checkName(value: unknown, out: Collector): string | undefined {
  if (typeof value !== 'string') return out.add('name', 'must be a string'), undefined;
  if (value.trim().length === 0) return out.add('name', 'must not be empty'), undefined;
  if (value.length > policyLimits.nameMaxLength) {
    return out.add('name', `must be at most ${policyLimits.nameMaxLength} characters`), undefined;
  }
  return value;
}

function checkDescription(value: unknown, out: Collector): string | undefined {
  if (typeof value !== 'string') return out.add('description', 'must be a string'), undefined;
  if (value.length > policyLimits.descriptionMaxLength) {
    return out.add('description', `must be at most ${policyLimits.descriptionMaxLength} characters`), undefined;
  }
  return value;
}

function checkEffect(value: unknown, out: Collector): Effect | undefined {
  if (value === 'allow' || value === 'deny') return value;
  out.add('effect', 'must be allow or deny');
  return undefined;
}

function checkList(field: string, value: unknown, entryError: (v: string) => string | undefined, out: Collector): string[] | undefined {
  if (!Array.isArray(value)) return out.add(field, 'must be an array of strings'), undefined;
  if (value.length === 0) return out.add(field, 'must not be empty'), undefined;
  if (value.length > policyLimits.maxEntries) return out.add(field, `must have at most ${policyLimits.maxEntries} entries`), undefined;
  const before = out.errors.length;
  value.forEach((entry: unknown, i) => {
    const message = typeof entry === 'string' ? entryError(entry) : 'must be a string';
    if (message) out.add(`${field}[${i}]`, message);
  });
  return out.errors.length === before ? (value as string[]) : undefined;
}

/**
 * Conditions: absent, null or `{}` is no condition; the only known key is `ip`, whose only key is
 * `allowlist`, a non-empty array of CIDRs. A key whose value is undefined counts as absent (a decoded
 * protobuf message carries `ip: undefined` when the field is not set).
 */
function checkConditions(value: unknown, out: Collector): PolicyConditions | undefined {
  if (value === undefined || value === null) return {};
  if (!isPlainObject(value)) return out.add('conditions', 'must be an object'), undefined;
  const before = out.errors.length;
  for (const key of Object.keys(value)) {
    if (key !== 'ip' && value[key] !== undefined) out.add(`conditions.${key}`, 'unknown condition (the only condition is ip)');
  }
  const ip = value.ip;
  let result: PolicyConditions = {};
  if (ip !== undefined && ip !== null) {
    if (!isPlainObject(ip)) {
      out.add('conditions.ip', 'must be an object with an allowlist');
    } else {
      for (const key of Object.keys(ip)) {
        if (key !== 'allowlist' && ip[key] !== undefined) out.add(`conditions.ip.${key}`, 'unknown field (the only field is allowlist)');
      }
      if (ip.allowlist === undefined) out.add('conditions.ip.allowlist', 'is required');
      else {
        const allowlist = checkList('conditions.ip.allowlist', ip.allowlist, cidrError, out);
        if (allowlist) result = { ip: { allowlist } };
      }
    }
  }
  return out.errors.length === before ? result : undefined;
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

/** The fields of a new policy (or a draft), with every error added to `out`. */
function checkCreate(input: PolicyInput, out: Collector): PolicyFields {
  return {
    name: checkName(input.name, out),
    description: input.description === undefined ? '' : checkDescription(input.description, out),
    effect: checkEffect(input.effect, out),
    principals: checkList('principals', input.principals, principalError, out),
    actions: checkList('actions', input.actions, actionError, out),
    resources: checkList('resources', input.resources, resourceError, out),
    conditions: checkConditions(input.conditions, out),
  } as PolicyFields;
}

/** A new policy: every field but description (default "") and conditions (default {}) is required. */
export function validateCreate(input: PolicyInput): PolicyFields {
  const out = new Collector();
  const fields = checkCreate(input, out);
  out.throwIfAny();
  return fields;
}

/**
 * A change: any subset of the fields; a present field replaces the stored value as a whole (arrays and
 * conditions included: `conditions: {}` removes every condition). No field at all is an error.
 */
export function validateUpdate(input: PolicyInput): PolicyChanges {
  const out = new Collector();
  const changes: PolicyChanges = {};
  if (input.name !== undefined) changes.name = checkName(input.name, out);
  if (input.description !== undefined) changes.description = checkDescription(input.description, out);
  if (input.effect !== undefined) changes.effect = checkEffect(input.effect, out);
  if (input.principals !== undefined) changes.principals = checkList('principals', input.principals, principalError, out);
  if (input.actions !== undefined) changes.actions = checkList('actions', input.actions, actionError, out);
  if (input.resources !== undefined) changes.resources = checkList('resources', input.resources, resourceError, out);
  if (input.conditions !== undefined) changes.conditions = checkConditions(input.conditions, out);
  out.throwIfAny();
  if (Object.keys(changes).length === 0) {
    throw AppError.invalid([
      { field: '(body)', message: 'give at least one of name, description, effect, principals, actions, resources, conditions' },
    ]);
  }
  return changes;
}

export interface SimulationInput {
  userId: string;
  action: string;
  resource: string;
  ip?: string;
  roles: string[];
  /** Draft policies (never stored) and how they combine with the stored ones; absent: stored only. */
  drafts?: SimulationDrafts;
  /** Explain every policy that did not match. */
  explain: boolean;
}

export const simulationLimits = { actionMaxLength: 256, resourceMaxLength: 8192, maxRoles: 100, maxDrafts: 100 } as const;

/** Ids a draft may carry: `draft_<name>`, or a policy id (under merge the draft stands in for that policy). */
const DRAFT_ID = /^draft_[a-z0-9_-]{1,64}$/;

export interface SimulationRequestInput {
  principal: string;
  action: string;
  resource: string;
  ip: string;
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
  const ids = new Set<string>();
  const policies: EnginePolicy[] = [];
  drafts.forEach((draft, i) => {
    const scoped = out.scoped(`policies[${i}].`);
    const fields = checkCreate(draft, scoped);
    let id = `draft_${i}`;
    if (draft.id !== undefined && draft.id !== '') {
      if (typeof draft.id !== 'string' || !(DRAFT_ID.test(draft.id) || isId('pol', draft.id))) {
        scoped.add('id', 'must be draft_<name> (a-z, 0-9, _ and -, at most 64) or the id of a stored policy (pol_...)');
      } else id = draft.id;
    }
    if (ids.has(id)) scoped.add('id', `duplicate id ${id} (a draft without an id is draft_<its index>)`);
    ids.add(id);
    // description is validated like a stored policy's, but takes no part in a decision
    const { description: _description, ...decisive } = fields;
    policies.push({ id, ...decisive });
  });
  return mode === 'merge' || mode === 'replace' ? { mode, policies } : undefined;
}

/**
 * A simulated request: principal `user:<id>`, non-empty action and resource, an optional ip address; for
 * simulations also draft policies with their mode, and whether to explain.
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
  if (input.roles.length > simulationLimits.maxRoles) out.add('roles', `must have at most ${simulationLimits.maxRoles} entries`);
  const withDrafts = (input.policies !== undefined && input.policies.length > 0) || (input.mode !== undefined && input.mode !== '');
  const drafts = withDrafts ? checkDrafts(input, out) : undefined;
  out.throwIfAny();
  return {
    userId,
    action: input.action,
    resource: input.resource,
    ip: input.ip || undefined,
    roles: input.roles,
    ...(drafts ? { drafts } : {}),
    explain: input.explain === true,
  };
}
