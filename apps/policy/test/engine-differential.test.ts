// Differential test (issue 5): generated (policy set, request) cases evaluated by the WASM engine in Node and
// by `opa eval` on the Rego source must agree on every case: allowed, effect, matched (ids, names, effects,
// order) and the explanations of the policies that did not match (which part failed, the values compared,
// order, count). Policies carry ip and mfa conditions, requests ips and MFA facts (odd ones included). A
// third of the requests carry draft policies (merge or replace, some standing in for a
// stored policy). Per case:
//   wasm, indexed      the engine as the service uses it (setPolicies builds the index): evaluate and explain
//   wasm, scan         the same module with the document's index left out (every policy checked): explain
//   opa eval, indexed  the Rego interpreted by opa, same document: explained
//   opa eval, scan     the Rego interpreted by opa, no index: explained
// so a compiler/SDK divergence, an index that misses a candidate, and a decision entry point that disagrees
// with the explained one all show up.
import path from 'node:path';
import { buildDataDocument, documentPolicy, explanationOf, loadEngine } from '../src/engine';
import type { AuthzRequest, EnginePolicy, ExplainedDecision, Explanation, MatchedPolicy } from '../src/engine';
import { randomDrafts, randomPolicySet, randomRequest, seeded } from './support/generate';
import { describeWithOpa, opaEval } from './support/opa';

const SETS = 200;
const REQUESTS_PER_SET = 50; // 10,000 cases
const SETS_PER_OPA_CALL = 20; // 1,000 cases per `opa eval`
const SEED = 20240605;

interface Normalized {
  allowed: boolean;
  effect: string;
  matched: MatchedPolicy[];
  notMatched: Explanation[];
  notMatchedCount: number;
}

interface OpaExplained {
  allowed: boolean;
  effect: string;
  matched: MatchedPolicy[];
  not_matched: Explanation[];
  not_matched_count: number;
}

interface Case {
  policies: EnginePolicy[];
  requests: AuthzRequest[];
}

/** A canonical form (fixed key order) so results compare as JSON text. */
function normalize(d: Omit<Normalized, 'notMatched'> & { notMatched: Explanation[] }): Normalized {
  return {
    allowed: d.allowed,
    effect: d.effect,
    matched: d.matched.map((m) => ({ id: m.id, name: m.name, effect: m.effect })),
    notMatched: d.notMatched.map(explanationOf),
    notMatchedCount: d.notMatchedCount,
  };
}

function fromEngine(d: ExplainedDecision): Normalized {
  return normalize({ ...d, matched: d.matchedPolicies });
}

function fromOpa(d: OpaExplained): Normalized {
  return normalize({ ...d, notMatched: d.not_matched, notMatchedCount: d.not_matched_count });
}

/** The request as the engine hands it to the module (drafts normalised like stored policies). */
function asInput(req: AuthzRequest): AuthzRequest {
  return req.drafts ? { ...req, drafts: { mode: req.drafts.mode, policies: req.drafts.policies.map(documentPolicy) } } : req;
}

describeWithOpa('differential: wasm engine vs opa eval', (opa) => {
  test(`${SETS * REQUESTS_PER_SET} generated cases agree, explanations and drafts included`, async () => {
    const rng = seeded(SEED);
    const sets: Case[] = Array.from({ length: SETS }, () => {
      const policies = randomPolicySet(rng, 12);
      const requests = Array.from({ length: REQUESTS_PER_SET }, () => {
        const req = randomRequest(rng);
        return rng() < 0.33 ? { ...req, drafts: randomDrafts(rng, policies) } : req;
      });
      return { policies, requests };
    });

    const indexedEngine = await loadEngine();
    const scanEngine = await loadEngine();
    const files = ['apps/policy/rego/policy.rego', path.join(__dirname, 'support', 'differential.rego')];

    let cases = 0;
    const mismatches: string[] = [];
    const tally = {
      allow: 0,
      deny: 0,
      defaultDeny: 0,
      ipConditionMatched: 0,
      mfaConditionMatched: 0,
      mfaConditionFailed: { mfa: 0, 'mfa.maxAgeSeconds': 0 } as Record<string, number>,
      selfMatched: 0,
      merge: 0,
      replace: 0,
      draftMatched: 0,
      standIn: 0,
      failed: { principal: 0, action: 0, resource: 0, condition: 0 },
    };

    for (let start = 0; start < sets.length; start += SETS_PER_OPA_CALL) {
      const batch = sets.slice(start, start + SETS_PER_OPA_CALL);
      const documents = batch.map((s) => buildDataDocument(s.policies));
      const opaResults = opaEval(opa, files, 'data.secsvc.differential.results', {
        sets: batch.map((s, i) => ({ policies: documents[i]!.policies, index: documents[i]!.index, requests: s.requests.map(asInput) })),
      }) as { scan: OpaExplained[][]; indexed: OpaExplained[][] };

      batch.forEach((set, i) => {
        indexedEngine.setPolicies(set.policies);
        scanEngine.setDataDocument({ policies: documents[i]!.policies });
        set.requests.forEach((req, j) => {
          cases += 1;
          const wasmIndexed = fromEngine(indexedEngine.explain(req));
          const decision = indexedEngine.evaluate(req);
          const results = {
            wasmDecisionEntryPoint: { ...wasmIndexed, allowed: decision.allowed, effect: decision.effect, matched: decision.matchedPolicies },
            wasmScan: fromEngine(scanEngine.explain(req)),
            opaIndexed: fromOpa(opaResults.indexed[i]![j]!),
            opaScan: fromOpa(opaResults.scan[i]![j]!),
          };
          for (const [name, other] of Object.entries(results)) {
            if (JSON.stringify(normalize(other)) !== JSON.stringify(wasmIndexed) && mismatches.length < 5) {
              mismatches.push(
                `case ${start + i}/${j}: wasm indexed ${JSON.stringify(wasmIndexed)} != ${name} ${JSON.stringify(other)}\n` +
                  `  request ${JSON.stringify(req)}\n  policies ${JSON.stringify(set.policies)}`,
              );
            }
          }
          if (wasmIndexed.matched.length === 0) tally.defaultDeny += 1;
          else if (wasmIndexed.allowed) tally.allow += 1;
          else tally.deny += 1;
          const inPlay = [...(req.drafts?.policies ?? []), ...(req.drafts?.mode === 'replace' ? [] : set.policies)];
          const matchedIds = new Set(wasmIndexed.matched.map((m) => m.id));
          const matchedPolicies = inPlay.filter((p) => matchedIds.has(p.id));
          if (matchedPolicies.some((p) => p.conditions?.ip)) tally.ipConditionMatched += 1;
          if (matchedPolicies.some((p) => p.conditions?.mfa !== undefined)) tally.mfaConditionMatched += 1;
          if (matchedPolicies.some((p) => p.resources.some((r) => r.includes('${self}')))) tally.selfMatched += 1;
          if (req.drafts) {
            tally[req.drafts.mode] += 1;
            if (req.drafts.policies.some((p) => matchedIds.has(p.id))) tally.draftMatched += 1;
            if (req.drafts.mode === 'merge' && req.drafts.policies.some((d) => set.policies.some((p) => p.id === d.id))) tally.standIn += 1;
          }
          for (const e of wasmIndexed.notMatched) {
            tally.failed[e.failed] += 1;
            if (e.condition?.startsWith('mfa')) tally.mfaConditionFailed[e.condition] = (tally.mfaConditionFailed[e.condition] ?? 0) + 1;
          }
          // every policy in play is either matched or counted as not matched
          expect(wasmIndexed.notMatchedCount + matchedIds.size).toBe(new Set(inPlay.map((p) => p.id)).size);
        });
      });
    }

    expect(mismatches).toEqual([]);
    expect(cases).toBeGreaterThanOrEqual(10000);
    // The generator is not degenerate: every outcome, IP conditions, ${self} paths, both draft modes, drafts
    // standing in for stored policies, and every failing part occur often.
    expect(tally.allow).toBeGreaterThan(500);
    expect(tally.deny).toBeGreaterThan(500);
    expect(tally.defaultDeny).toBeGreaterThan(500);
    expect(tally.ipConditionMatched).toBeGreaterThan(200);
    expect(tally.mfaConditionMatched).toBeGreaterThan(200);
    expect(tally.mfaConditionFailed.mfa).toBeGreaterThan(500);
    expect(tally.mfaConditionFailed['mfa.maxAgeSeconds']).toBeGreaterThan(100);
    expect(tally.selfMatched).toBeGreaterThan(200);
    expect(tally.merge).toBeGreaterThan(1000);
    expect(tally.replace).toBeGreaterThan(500);
    expect(tally.draftMatched).toBeGreaterThan(300);
    expect(tally.standIn).toBeGreaterThan(300);
    for (const part of ['principal', 'action', 'resource', 'condition'] as const) expect(tally.failed[part]).toBeGreaterThan(1000);
  }, 300_000);
});
