// Differential test (issue 5): generated (policy set, request) cases evaluated by the WASM engine in Node and
// by `opa eval` on the Rego source must agree on every case: allowed, effect and matched (ids, names,
// effects, order). Four evaluations per case:
//   wasm, indexed      the engine as the service uses it (setPolicies builds the index)
//   wasm, scan         the same module with the document's index left out (every policy checked)
//   opa eval, indexed  the Rego interpreted by opa, same document
//   opa eval, scan     the Rego interpreted by opa, no index
// so a compiler/SDK divergence and an index that misses a candidate both show up.
import path from 'node:path';
import { buildDataDocument, loadEngine } from '../src/engine';
import type { AuthzRequest, Decision, EnginePolicy, MatchedPolicy } from '../src/engine';
import { randomPolicySet, randomRequest, seeded } from './support/generate';
import { describeWithOpa, opaEval } from './support/opa';

const SETS = 200;
const REQUESTS_PER_SET = 50; // 10,000 cases
const SETS_PER_OPA_CALL = 20; // 1,000 cases per `opa eval`
const SEED = 20240605;

interface Normalized {
  allowed: boolean;
  effect: string;
  matched: MatchedPolicy[];
}

interface Case {
  policies: EnginePolicy[];
  requests: AuthzRequest[];
}

/** A canonical form (fixed key order) so results compare as JSON text. */
function normalize(d: Normalized): Normalized {
  return { allowed: d.allowed, effect: d.effect, matched: d.matched.map((m) => ({ id: m.id, name: m.name, effect: m.effect })) };
}

function fromEngine(d: Decision): Normalized {
  return normalize({ allowed: d.allowed, effect: d.effect, matched: d.matchedPolicies });
}

describeWithOpa('differential: wasm engine vs opa eval', (opa) => {
  test(`${SETS * REQUESTS_PER_SET} generated cases agree`, async () => {
    const rng = seeded(SEED);
    const sets: Case[] = Array.from({ length: SETS }, () => ({
      policies: randomPolicySet(rng, 12),
      requests: Array.from({ length: REQUESTS_PER_SET }, () => randomRequest(rng)),
    }));

    const indexedEngine = await loadEngine();
    const scanEngine = await loadEngine();
    const files = ['apps/policy/rego/policy.rego', path.join(__dirname, 'support', 'differential.rego')];

    let cases = 0;
    const mismatches: string[] = [];
    const tally = { allow: 0, deny: 0, defaultDeny: 0, ipConditionMatched: 0, selfMatched: 0 };

    for (let start = 0; start < sets.length; start += SETS_PER_OPA_CALL) {
      const batch = sets.slice(start, start + SETS_PER_OPA_CALL);
      const documents = batch.map((s) => buildDataDocument(s.policies));
      const opaResults = opaEval(opa, files, 'data.secsvc.differential.results', {
        sets: batch.map((s, i) => ({ policies: documents[i]!.policies, index: documents[i]!.index, requests: s.requests })),
      }) as { scan: Normalized[][]; indexed: Normalized[][] };

      batch.forEach((set, i) => {
        indexedEngine.setPolicies(set.policies);
        scanEngine.setDataDocument({ policies: documents[i]!.policies });
        set.requests.forEach((req, j) => {
          cases += 1;
          const wasmIndexed = fromEngine(indexedEngine.evaluate(req));
          const results = {
            wasmScan: fromEngine(scanEngine.evaluate(req)),
            opaIndexed: normalize(opaResults.indexed[i]![j]!),
            opaScan: normalize(opaResults.scan[i]![j]!),
          };
          for (const [name, other] of Object.entries(results)) {
            if (JSON.stringify(other) !== JSON.stringify(wasmIndexed) && mismatches.length < 5) {
              mismatches.push(
                `case ${start + i}/${j}: wasm indexed ${JSON.stringify(wasmIndexed)} != ${name} ${JSON.stringify(other)}\n` +
                  `  request ${JSON.stringify(req)}\n  policies ${JSON.stringify(set.policies)}`,
              );
            }
          }
          if (wasmIndexed.matched.length === 0) tally.defaultDeny += 1;
          else if (wasmIndexed.allowed) tally.allow += 1;
          else tally.deny += 1;
          const matchedIds = new Set(wasmIndexed.matched.map((m) => m.id));
          const matchedPolicies = set.policies.filter((p) => matchedIds.has(p.id));
          if (matchedPolicies.some((p) => p.conditions?.ip)) tally.ipConditionMatched += 1;
          if (matchedPolicies.some((p) => p.resources.some((r) => r.includes('${self}')))) tally.selfMatched += 1;
        });
      });
    }

    expect(mismatches).toEqual([]);
    expect(cases).toBeGreaterThanOrEqual(10000);
    // The generator is not degenerate: every outcome, IP conditions and ${self} paths occur often.
    expect(tally.allow).toBeGreaterThan(500);
    expect(tally.deny).toBeGreaterThan(500);
    expect(tally.defaultDeny).toBeGreaterThan(500);
    expect(tally.ipConditionMatched).toBeGreaterThan(200);
    expect(tally.selfMatched).toBeGreaterThan(200);
  }, 300_000);
});
