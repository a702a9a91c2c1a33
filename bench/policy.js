#!/usr/bin/env node
// bench/policy: policy decisions three ways, in one run (after `npm run build`; needs the opa CLI from
// scripts/install-tools.sh):
//   1. in process: the wasm engine's evaluate() p50/p99 with 10, 1,000 and 10,000 stored policies;
//   2. baseline: `opa bench` (OPA's own Go evaluator) on the same Rego, data document and input;
//   3. over HTTP: POST /v1/policies/simulate through the gateway (autocannon, 50 connections): stored
//      policies only, with 3 draft policies merged, and with explain: true, in interleaved rounds with the
//      gateway's GET /healthz (the ceiling of issue 21: simulate >= 0.5 of it), CPU per request per process.
//   npm run bench:policy            (BENCH_DURATION=5 for a quick look)
/* global fetch -- Node's fetch (the root ESLint config lists only the CommonJS globals) */
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { performance } = require('node:perf_hooks');
const { buildDataDocument, loadEngine } = require('../apps/policy/dist/engine');
const { findOpa } = require('../apps/policy/rego/opa-tool');
const { KEY, cpuMs, load, machine, settle, startBenchStack } = require('./support');

const duration = Number(process.env.BENCH_DURATION ?? 15);
const ROUNDS = 3;
const ROLES = Array.from({ length: 50 }, (_, i) => `r${i}`);
const ACTIONS = ['read', 'create', 'update', 'delete', 'list', 'export'];

/** A deterministic service-like mix: role policies, per-user policies, a few for everyone, some denies. */
function policies(n) {
  let seed = n;
  const rnd = (k) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % k);
  return Array.from({ length: n }, (_, i) => {
    const kind = rnd(10);
    const principal = kind < 6 ? `role:${ROLES[rnd(ROLES.length)]}` : kind < 9 ? `user:user_${String(i).padStart(26, '0')}` : '*';
    return {
      id: `pol_${String(i).padStart(26, '0')}`,
      name: `p${i}`,
      effect: rnd(5) === 0 ? 'deny' : 'allow',
      principals: [principal],
      actions: [ACTIONS[rnd(ACTIONS.length)]],
      resources: [`/projects/p${rnd(100)}/*`],
      conditions: rnd(8) === 0 ? { ip: { allowlist: ['10.0.0.0/8'] } } : {},
    };
  });
}

/** A policy without its id: a POST /policies body, or a draft for the simulator. */
const bodyOf = (p) => ({
  name: p.name,
  effect: p.effect,
  principals: p.principals,
  actions: p.actions,
  resources: p.resources,
  ...(p.conditions.ip ? { conditions: p.conditions } : {}),
});

const request = (i) => ({
  principal: { id: `user_${String(i % 1000).padStart(26, '0')}`, roles: [`role_${ROLES[i % ROLES.length]}`] },
  action: ACTIONS[i % ACTIONS.length],
  resource: `/projects/p${i % 100}/doc`,
  context: { ip: '10.1.2.3' },
});

async function inProcess(n) {
  const engine = await loadEngine();
  engine.setPolicies(policies(n));
  for (let i = 0; i < 2000; i++) engine.evaluate(request(i));
  const times = [];
  for (let i = 0; i < 20000; i++) {
    const t = performance.now();
    engine.evaluate(request(i));
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  return { p50: times[10000] * 1000, p99: times[19800] * 1000 };
}

function opaBench(opa, n) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'secsvc-opa-bench-'));
  try {
    fs.writeFileSync(path.join(dir, 'data.json'), JSON.stringify(buildDataDocument(policies(n))));
    fs.writeFileSync(path.join(dir, 'input.json'), JSON.stringify(request(7)));
    const out = execFileSync(
      opa,
      ['bench', '--format', 'json', '-d', path.join(__dirname, '../apps/policy/rego/policy.rego'), '-d', path.join(dir, 'data.json'), '-i', path.join(dir, 'input.json'), 'data.secsvc.authz.decision'],
      { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
    );
    const r = JSON.parse(out);
    return r.T / r.N / 1000; // Go benchmark result: total ns over iterations
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const HEALTHZ = Symbol('healthz');
const HEALTHZ_LABEL = '`GET /healthz` (ceiling)';
const medianRate = (runs) => [...runs].map((r) => r.requests.average).sort((a, b) => a - b)[Math.floor(runs.length / 2)];

async function main() {
  const opa = findOpa();
  const rows = [];
  for (const n of [10, 1000, 10000]) {
    const wasm = await inProcess(n);
    const go = opa ? opaBench(opa, n) : NaN;
    rows.push(`| ${n} | ${wasm.p50.toFixed(0)} | ${wasm.p99.toFixed(0)} | ${Number.isNaN(go) ? 'opa missing' : go.toFixed(0)} |`);
  }
  const { stack, stop } = await startBenchStack();
  const http = {};
  try {
    const json = (method, p, body) =>
      fetch(`${stack.baseUrl}${p}`, { method, headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' }, body: JSON.stringify(body) }).then((r) => r.json());
    const user = (await json('POST', '/users', { email: 'bench.policy@example.com', name: 'Bench', roles: ['role_r1'] })).data;
    for (const p of policies(100)) await json('POST', '/policies', bodyOf(p));
    const simulation = { principal: `user:${user.id}`, action: 'read', resource: '/projects/p1/doc', context: { ip: '10.1.2.3' } };
    const drafts = policies(3).map(bodyOf);
    const bodies = {
      stored: simulation,
      '3 drafts merged': { ...simulation, policies: drafts },
      'explain: true': { ...simulation, explain: true },
    };
    const optsOf = (body) =>
      body === HEALTHZ
        ? { url: `${new URL(stack.baseUrl).origin}/healthz`, connections: 50 }
        : {
            url: `${stack.baseUrl}/policies/simulate`,
            method: 'POST',
            connections: 50,
            headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
            body: JSON.stringify(body),
          };
    const cases = { ...bodies, [HEALTHZ_LABEL]: HEALTHZ };
    const pids = Object.fromEntries(['gateway', 'policy', 'identity', 'audit', 'export-worker', 'postgres'].map((n) => [n, stack.pid(n)]));
    for (const body of Object.values(cases)) await load({ ...optsOf(body), duration: 3 });
    // Interleaved rounds, so drift in the machine's load falls on every body alike; the median round counts.
    for (let round = 0; round < ROUNDS; round++) {
      for (const [label, body] of Object.entries(cases)) {
        await settle(pids);
        const before = cpuMs(pids);
        const r = await load({ ...optsOf(body), duration: Math.max(1, Math.round(duration / ROUNDS)) });
        await settle(pids);
        const after = cpuMs(pids);
        r.cpu = Object.fromEntries(Object.keys(after).map((k) => [k, (after[k] - before[k]) / r.requests.total]));
        (http[label] ??= []).push(r);
      }
    }
  } finally {
    await stop();
  }
  console.log(
    [
      `### ${machine()}`,
      '',
      '`npm run bench:policy`: in-process wasm evaluate (20,000 evaluations per size) against `opa bench` on the same Rego, data and input',
      '',
      '| stored policies | wasm p50 µs | wasm p99 µs | opa bench (Go) µs/op |',
      '|---:|---:|---:|---:|',
      ...rows,
      '',
      `POST /v1/policies/simulate over HTTP (100 stored policies, 50 connections, ${ROUNDS} interleaved rounds of ${Math.max(1, Math.round(duration / ROUNDS))} s per body; the median round, and the range of req/s):`,
      '',
      '| body | req/s (median) | req/s range | of `/healthz` | p50 ms | p99 ms | non-2xx | CPU ms/request (median round) |',
      '|---|---:|---:|---:|---:|---:|---:|---|',
      ...Object.entries(http).map(([label, runs]) => {
        const sorted = [...runs].sort((a, b) => a.requests.average - b.requests.average);
        const mid = sorted[Math.floor(sorted.length / 2)];
        const range = `${Math.round(sorted[0].requests.average)}–${Math.round(sorted[sorted.length - 1].requests.average)}`;
        const non2xx = runs.reduce((n, r) => n + r.non2xx, 0);
        const ceiling = medianRate(http[HEALTHZ_LABEL]);
        const total = Object.values(mid.cpu).reduce((a, b) => a + b, 0);
        const parts = Object.entries(mid.cpu).filter(([, v]) => v >= 0.005).map(([k, v]) => `${k} ${v.toFixed(2)}`).join(', ');
        return `| ${label} | ${Math.round(mid.requests.average)} | ${range} | ${(medianRate(runs) / ceiling).toFixed(2)} | ${mid.latency.p50} | ${mid.latency.p99} | ${non2xx} | ${total.toFixed(2)} (${parts}) |`;
      }),
    ].join('\n'),
  );
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
