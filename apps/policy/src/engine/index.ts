export { DEFAULT_WASM_PATH, ENTRYPOINT, PolicyEngine, loadEngine } from './engine';
export type { EngineOptions } from './engine';
export { MAX_INDEX_PAIRS_PER_POLICY, buildDataDocument, principalKey } from './data-document';
export type { DataDocument, IdSet } from './data-document';
export type { AuthzRequest, Decision, EnginePolicy, Effect, IpCondition, MatchedPolicy, PolicyConditions } from './types';
