export { DEFAULT_WASM_PATH, ENTRYPOINT, EXPLAIN_ENTRYPOINT, EXPLAIN_LIMIT, PolicyEngine, explanationOf, hasMfaCondition, loadEngine } from './engine';
export type { EngineOptions } from './engine';
export { MAX_INDEX_PAIRS_PER_POLICY, buildDataDocument, documentPolicy, principalKey } from './data-document';
export type { DataDocument, IdSet } from './data-document';
export type {
  AuthzRequest,
  Decision,
  EnginePolicy,
  Effect,
  ExplainedDecision,
  Explanation,
  FailedPart,
  IpCondition,
  MfaCondition,
  MatchedPolicy,
  PolicyConditions,
  SimulationDrafts,
} from './types';
