import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { loadPolicy } from '@open-policy-agent/opa-wasm';
import type { LoadedPolicy } from '@open-policy-agent/opa-wasm';
import { buildDataDocument, documentPolicy } from './data-document';
import type { DataDocument } from './data-document';
import type { AuthzRequest, Decision, EnginePolicy, ExplainedDecision, Explanation, MatchedPolicy } from './types';

/** apps/policy/rego/policy.wasm, from src/engine (tests) and from dist/engine (the built service) alike. */
export const DEFAULT_WASM_PATH = path.join(__dirname, '..', '..', 'rego', 'policy.wasm');

/** The entry point of decisions in policy.wasm (`opa build -e`). */
export const ENTRYPOINT = 'secsvc/authz/decision';

/** The entry point of decisions with explanations of the policies that did not match. */
export const EXPLAIN_ENTRYPOINT = 'secsvc/authz/explained';

/** At most this many not-matched policies are explained per decision (`explain_limit` in policy.rego). */
export const EXPLAIN_LIMIT = 100;

export interface EngineOptions {
  wasmPath?: string;
  /** Initial wasm memory in 64 KiB pages; the module grows it itself as the data needs (no maximum). */
  initialMemoryPages?: number;
}

interface RawDecision {
  allowed: boolean;
  effect: 'allow' | 'deny';
  matched: MatchedPolicy[];
}

interface RawExplainedDecision extends RawDecision {
  not_matched: Explanation[];
  not_matched_count: number;
}

/**
 * The policy decision engine: the Rego program compiled to WebAssembly, run in process.
 * Not safe to share across worker threads; within one thread every call is synchronous.
 *
 * Memory (npm-opa-wasm#143): with ABI 1.2+ modules the SDK hands opa_eval the heap pointer just past the
 * data and input on every call, so each evaluation reuses the same region of the wasm heap and the memory
 * stops growing after the first evaluations of the largest request. The soak test
 * (test/engine-soak.test.ts, test/support/soak.ts) keeps checking that; see apps/policy/rego/README.md.
 */
export class PolicyEngine {
  private policyCount = 0;
  /** Whether some loaded policy has an mfa condition (without one, no denial is ever lifted by a step-up). */
  private mfaConditions = false;
  /** The loaded data document's policies by id (for the step-up answer: the conditions of a policy). */
  private loaded: Record<string, EnginePolicy> = Object.create(null) as Record<string, EnginePolicy>;
  private readonly entrypoint: number;
  private readonly explainEntrypoint: number;

  constructor(private readonly policy: LoadedPolicy) {
    const entrypoint = (name: string): number => {
      const id: unknown = (policy.entrypoints as Record<string, unknown>)[name];
      if (typeof id !== 'number') throw new Error(`the policy module has no entry point ${name}`);
      return id;
    };
    this.entrypoint = entrypoint(ENTRYPOINT);
    this.explainEntrypoint = entrypoint(EXPLAIN_ENTRYPOINT);
  }

  /** Replaces the stored policies (the whole data document, including its index). */
  setPolicies(policies: readonly EnginePolicy[]): void {
    this.setDataDocument(buildDataDocument(policies));
  }

  /** For tests: loads a data document as is (for example one without an index). */
  setDataDocument(data: DataDocument | Omit<DataDocument, 'index'>): void {
    // Passed as an object (the SDK stringifies it): an ArrayBuffer made here could come from another realm
    // under Jest, fail the SDK's instanceof check and be loaded as `{}`.
    this.policy.setData(data);
    this.policyCount = Object.keys(data.policies).length;
    this.loaded = data.policies;
    this.mfaConditions = Object.values(data.policies).some(hasMfaCondition);
  }

  /** Whether some loaded (stored) policy has an mfa condition. */
  get hasMfaConditions(): boolean {
    return this.mfaConditions;
  }

  get size(): number {
    return this.policyCount;
  }

  /** The loaded (stored) policy with this id, as the program reads it; undefined when there is none. */
  storedPolicy(id: string): EnginePolicy | undefined {
    return Object.prototype.hasOwnProperty.call(this.loaded, id) ? this.loaded[id] : undefined;
  }

  /** Current size of the module's linear memory in bytes (it never shrinks). */
  get wasmMemoryBytes(): number {
    return this.policy.mem.buffer.byteLength;
  }

  /**
   * The decision for one request. Drafts (`request.drafts`) travel in the input, so the loaded data document
   * is never touched and a draft simulation cannot disturb another request's decision.
   */
  evaluate(request: AuthzRequest): Decision {
    return decisionOf(this.evaluateRaw(inputOf(request)));
  }

  /** The decision plus, for every policy in play that did not match, the first part that failed. */
  explain(request: AuthzRequest): ExplainedDecision {
    const raw = this.evaluateRaw(inputOf(request), this.explainEntrypoint) as RawExplainedDecision;
    return { ...decisionOf(raw), notMatched: raw.not_matched.map(explanationOf), notMatchedCount: raw.not_matched_count };
  }

  /** The Rego decision object as the module returns it (entry point `decision` unless told otherwise). */
  evaluateRaw(input: unknown, entrypoint = this.entrypoint): RawDecision {
    const resultSet = this.policy.evaluate(input, entrypoint) as Array<{ result?: RawDecision }> | null;
    const result = resultSet?.[0]?.result;
    if (result === undefined) throw new Error('the policy module returned no decision');
    return result;
  }
}

/** The program's input: drafts normalised like stored policies (see README "Input"). */
function inputOf(request: AuthzRequest): AuthzRequest {
  if (!request.drafts) return request;
  return { ...request, drafts: { mode: request.drafts.mode, policies: request.drafts.policies.map(documentPolicy) } };
}

/** One explanation as the module returns it, rebuilt with its fields in a stable order. */
export function explanationOf(e: Explanation): Explanation {
  return { id: e.id, name: e.name, effect: e.effect, failed: e.failed, condition: e.condition, expected: e.expected, actual: e.actual };
}

/** Rebuilt so the fields come in a stable order (the module's JSON order is its hash order). */
function decisionOf(raw: RawDecision): Decision {
  const matchedPolicies = raw.matched.map((m) => ({ id: m.id, name: m.name, effect: m.effect }));
  return { allowed: raw.allowed, effect: raw.effect, matchedPolicies };
}

/** Loads the compiled policy; the engine starts with no policies (every request is denied). */
export async function loadEngine(options: EngineOptions = {}): Promise<PolicyEngine> {
  const wasm = await readFile(options.wasmPath ?? DEFAULT_WASM_PATH);
  const policy = await loadPolicy(wasm, { initial: options.initialMemoryPages ?? 16 });
  const engine = new PolicyEngine(policy);
  engine.setPolicies([]);
  return engine;
}

/** Whether a policy has an mfa condition (true or {maxAgeSeconds}). */
export function hasMfaCondition(policy: EnginePolicy | undefined): boolean {
  const mfa: unknown = policy?.conditions?.mfa;
  return mfa !== undefined && mfa !== null && mfa !== false;
}
