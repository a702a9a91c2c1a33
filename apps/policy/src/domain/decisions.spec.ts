// The decision store's reload rules with an in-memory policy source (no database): lazy first load,
// stale-while-reloading, a change announced during a load, the feed-down mode, and per-environment engines.
import { createLogger } from '@secsvc/shared';
import { loadEngine, type AuthzRequest, type EnginePolicy } from '../engine';
import { PolicyDecisions } from './decisions';

const logger = createLogger('test', 'silent');
const request: AuthzRequest = { principal: { id: 'user_1', roles: [] }, action: 'read', resource: '/x' };
const allowAll = (id: string): EnginePolicy => ({ id, name: id, effect: 'allow', principals: ['*'], actions: ['*'], resources: ['*'] });

function deferred<T>() {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** A policy source whose loads the test answers by hand, one at a time. */
function harness(live = true) {
  const stored: Record<string, EnginePolicy[]> = { live: [], test: [] };
  const pending: { environment: string; answer: () => void }[] = [];
  let manual = false;
  const state = { live, loads: 0, engines: 0 };
  const decisions = new PolicyDecisions(
    {
      loadPolicies: async (environment) => {
        state.loads++;
        if (!manual) return [...stored[environment]!];
        const d = deferred<void>();
        pending.push({ environment, answer: () => d.resolve() });
        await d.promise;
        return [...stored[environment]!];
      },
      createEngine: async () => {
        state.engines++;
        return loadEngine();
      },
      isLive: () => state.live,
    },
    logger,
  );
  return {
    decisions,
    stored,
    pending,
    state,
    manual: (on: boolean) => (manual = on),
  };
}

const flush = () => new Promise((r) => setImmediate(r));

describe('PolicyDecisions', () => {
  it('loads an environment on first use only, one engine per environment', async () => {
    const h = harness();
    h.stored.live = [allowAll('pol_1')];
    expect((await h.decisions.decide('live', request)).allowed).toBe(true);
    expect((await h.decisions.decide('live', request)).allowed).toBe(true);
    expect((await h.decisions.decide('test', request)).allowed).toBe(false);
    expect(h.state).toMatchObject({ loads: 2, engines: 2 });
    // a notification for an environment never used loads nothing
    h.decisions.changed('nowhere');
    expect(h.state.loads).toBe(2);
  });

  it('answers from the previous data until the reload after a change completes', async () => {
    const h = harness();
    await h.decisions.decide('live', request);
    h.stored.live = [allowAll('pol_1')];
    h.manual(true);
    h.decisions.changed('live');
    await flush();
    expect(h.pending).toHaveLength(1);
    expect((await h.decisions.decide('live', request)).allowed).toBe(false); // stale window
    h.pending.shift()!.answer();
    await h.decisions.refresh('live');
    expect((await h.decisions.decide('live', request)).allowed).toBe(true);
  });

  it('loads again when a change is announced while a load is reading', async () => {
    const h = harness();
    await h.decisions.decide('live', request);
    h.manual(true);
    h.decisions.changed('live');
    await flush();
    // the change lands after the first reload has read the old rows
    h.decisions.changed('live');
    h.stored.live = [allowAll('pol_2')];
    h.pending.shift()!.answer();
    await flush();
    expect(h.pending).toHaveLength(1); // a second load, not lost
    h.pending.shift()!.answer();
    await h.decisions.refresh('live');
    expect((await h.decisions.decide('live', request)).matchedPolicies.map((m) => m.id)).toEqual(['pol_2']);
    expect(h.state.loads).toBe(3);
  });

  it('afterWrite resolves once the writer replica reflects its own change', async () => {
    const h = harness();
    await h.decisions.decide('test', request);
    h.stored.test = [allowAll('pol_3')];
    await h.decisions.afterWrite('test');
    expect((await h.decisions.decide('test', request)).allowed).toBe(true);
  });

  it('reloads on every decision while the feed is down, and resyncs when it is back', async () => {
    const h = harness(false);
    await h.decisions.decide('live', request);
    h.stored.live = [allowAll('pol_4')];
    expect((await h.decisions.decide('live', request)).allowed).toBe(true);
    expect(h.state.loads).toBe(2);
    h.state.live = true;
    h.stored.live = [];
    h.decisions.resync();
    await h.decisions.refresh('live');
    expect((await h.decisions.decide('live', request)).allowed).toBe(false);
    expect(h.state.loads).toBe(3);
  });

  it('keeps answering from the previous data when a reload fails, and retries on the next decision', async () => {
    const h = harness();
    h.stored.live = [allowAll('pol_5')];
    await h.decisions.decide('live', request);
    let failing = true;
    Object.defineProperty(h.stored, 'live', {
      get: () => {
        if (failing) throw new Error('db down');
        return [];
      },
    });
    h.decisions.changed('live');
    await flush();
    expect(h.state.loads).toBe(2);
    expect((await h.decisions.decide('live', request)).allowed).toBe(true); // previous data; retry starts (and fails)
    await flush();
    expect(h.state.loads).toBe(3);
    failing = false;
    await h.decisions.decide('live', request); // starts the retry, which now succeeds
    await flush();
    expect(h.state.loads).toBe(4);
    expect((await h.decisions.decide('live', request)).allowed).toBe(false);
  });

  it('answers the step-up fields with every decision, explained or not', async () => {
    const h = harness();
    h.stored.live = [{ ...allowAll('pol_1'), conditions: { mfa: { maxAgeSeconds: 300 } } }];
    for (const explain of [false, true]) {
      expect(await h.decisions.decide('live', request, { explain })).toMatchObject({ allowed: false, mfaRequired: true, mfaMaxAgeSeconds: 300 });
      expect(await h.decisions.decide('live', { ...request, context: { mfa: true, mfaAgeSeconds: 10 } }, { explain })).toMatchObject({
        allowed: true,
        mfaRequired: false,
        mfaMaxAgeSeconds: 0,
      });
    }
  });

  it('explains on request only, and decides drafts over the loaded engine without reloading it', async () => {
    const h = harness();
    h.stored.live = [allowAll('pol_1'), { ...allowAll('pol_2'), actions: ['delete'] }];
    const plain = await h.decisions.decide('live', request);
    expect(plain.explanation).toBeUndefined();
    const explained = await h.decisions.decide('live', request, { explain: true });
    expect({ allowed: explained.allowed, effect: explained.effect, matchedPolicies: explained.matchedPolicies }).toEqual({
      allowed: plain.allowed,
      effect: plain.effect,
      matchedPolicies: plain.matchedPolicies,
    });
    expect(explained.explanation).toEqual({
      notMatched: [{ id: 'pol_2', name: 'pol_2', effect: 'allow', failed: 'action', condition: null, expected: ['delete'], actual: 'read' }],
      notMatchedCount: 1,
    });
    const replaced = await h.decisions.decide('live', { ...request, drafts: { mode: 'replace', policies: [] } });
    expect(replaced.allowed).toBe(false);
    expect((await h.decisions.decide('live', request)).allowed).toBe(true);
    expect(h.state).toMatchObject({ loads: 1, engines: 1 });
  });
});
