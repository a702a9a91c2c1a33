#!/usr/bin/env node
// bench/sso: the SAML 2.0 service provider through the gateway of the full local stack, driven by the test IdP
// of the tests (apps/gateway/test/support/saml-idp.ts), in one run:
//   1. SP-initiated logins, the server side of what a browser goes through: GET /login (signed AuthnRequest,
//      request id stored) → the test IdP signs a response (in this process, not counted in the steps) →
//      POST /acs (validation, 303) → GET /continue with the binding cookie (user found or created just in time,
//      session, user.login). BENCH_BROWSERS virtual browsers (default 1,4,16) for BENCH_DURATION s each
//      (default 15) with returning users, and BENCH_JIT_BROWSERS (default 4) with a new email per login;
//   2. IdP-initiated ACS alone (allowIdpInitiated), at 1 and BENCH_ACS_CONCURRENCY (default 16) requests in
//      flight, with responses signed before the timed loop (BENCH_ACS_RESPONSES per run, default 2000; a run
//      ends when they are used up or after BENCH_DURATION s), signed and signed + encrypted for the SP;
//   3. where the time goes: the pieces of the ACS timed one by one in this process with the gateway's own code
//      (apps/gateway/dist) and identity's RPCs called directly over gRPC (BENCH_SPLIT_RUNS each, default 300);
//      with BENCH_CPU_PROFILE=1 every app runs under --cpu-prof and the gateway's and identity's self time is
//      summed by package (the profiler slows them: take the other figures from a run without it).
// Run after `npm run build`:
//   npm run bench:sso            (BENCH_DURATION=5 for a quick look)
// Prints a Markdown block to paste into bench/RESULTS.md.
/* global fetch, performance, URL, URLSearchParams, Buffer -- Node's globals (the root ESLint config lists only the CommonJS ones) */
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const Module = require('node:module');
const os = require('node:os');
const path = require('node:path');
const { inflateRawSync } = require('node:zlib');
const pg = require('pg');
const { transformSync } = require('@swc/core');
const { DOMParser } = require('@xmldom/xmldom');
const { SignedXml } = require('xml-crypto');
const { identity } = require('@secsvc/proto');
const { createClient, promiseClient } = require('@secsvc/shared');
const { KEY, machine, startBenchStack } = require('./support');
const { assertionFacts, checkResponseRoot, decodeResponse } = require('../apps/gateway/dist/sso/assertion');
const { ANY_REQUEST, NO_REQUESTS, samlFor, validateResponse } = require('../apps/gateway/dist/sso/sp');

const duration = Number(process.env.BENCH_DURATION ?? 15);
const BROWSERS = (process.env.BENCH_BROWSERS ?? '1,4,16').split(',').map(Number);
const JIT_BROWSERS = Number(process.env.BENCH_JIT_BROWSERS ?? 4);
const ACS_CONCURRENCY = Number(process.env.BENCH_ACS_CONCURRENCY ?? 16);
const ACS_RESPONSES = Number(process.env.BENCH_ACS_RESPONSES ?? 2000);
const SPLIT_RUNS = Number(process.env.BENCH_SPLIT_RUNS ?? 300);
const PROFILE = process.env.BENCH_CPU_PROFILE === '1';
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

/**
 * The test IdP is TypeScript that the tests load through Jest's SWC transform: compiled the same way here (with
 * the @swc/core the repository already has), as a module of its own folder so its imports resolve as in tests.
 */
function loadTestIdp() {
  const file = path.join(__dirname, '..', 'apps/gateway/test/support/saml-idp.ts');
  const { code } = transformSync(fs.readFileSync(file, 'utf8'), {
    filename: file,
    jsc: { target: 'es2022', parser: { syntax: 'typescript' } },
    module: { type: 'commonjs' },
  });
  const m = new Module(file, module);
  m.filename = file;
  m.paths = Module._nodeModulePaths(path.dirname(file));
  m._compile(code, file);
  return m.exports;
}

/** Percentiles (ms) of a list of durations. */
function stats(samples) {
  const sorted = [...samples].sort((a, b) => a - b);
  const pct = (p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
  return { n: sorted.length, p50: pct(50), p95: pct(95), p99: pct(99) };
}
const ms = (x) => (x < 10 ? x.toFixed(2) : x.toFixed(1));
const pcts = (samples) => {
  const s = stats(samples);
  return `${ms(s.p50)} / ${ms(s.p95)} / ${ms(s.p99)}`;
};

/**
 * Busy time of one V8 CPU profile (its samples less idle) by where the code lives: garbage collector, node:crypto
 * by function (RSA sign, verify, decrypt), other Node internals, each package, our code. The ten largest shares.
 */
function profileShares(file) {
  const profile = JSON.parse(fs.readFileSync(file, 'utf8'));
  const frames = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
  const groups = new Map();
  let busy = 0;
  profile.samples.forEach((id, i) => {
    const { url, functionName } = frames.get(id);
    if (functionName === '(idle)') return;
    const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)?.[1];
    const native = functionName.startsWith('(') ? functionName : `(${functionName || 'native'})`;
    const crypto = url.startsWith('node:internal/crypto') && `node:crypto ${functionName || `(anonymous, ${url.split('/').pop()})`}`;
    const group = pkg ?? (crypto || (url.startsWith('node:') ? 'Node internals' : url.includes('/dist/') ? 'our code' : native));
    const t = profile.timeDeltas[i] ?? 0;
    groups.set(group, (groups.get(group) ?? 0) + t);
    busy += t;
  });
  const shares = [...groups]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 10)
    .map(([group, t]) => `${group} ${((100 * t) / busy).toFixed(1)} %`);
  return `${(busy / 1e6).toFixed(1)} s busy: ${shares.join(', ')}`;
}

const CLOCK_TICKS = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim());
/** CPU time (user + system, ms) a process has used so far, from /proc. */
function cpuMs(pid) {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
}

/** `workers` loops of `task(worker)` until `seconds` have passed (or a task says false); completed tasks per second. */
async function forSeconds(workers, seconds, task) {
  const started = performance.now();
  const deadline = started + seconds * 1000;
  let done = 0;
  await Promise.all(
    Array.from({ length: workers }, async (_, w) => {
      while (performance.now() < deadline) {
        if ((await task(w)) === false) return;
        done++;
      }
    }),
  );
  return { done, perSecond: done / ((performance.now() - started) / 1000) };
}

/** `fn(i)` for i < runs one after another (after 20 unmeasured runs, i from runs on): its durations in ms. */
async function timed(runs, fn) {
  for (let i = 0; i < 20; i++) await fn(runs + i);
  const out = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    await fn(i);
    out.push(performance.now() - t);
  }
  return out;
}

async function main() {
  const { assertionXml, encryptAssertion, samlId, signAssertion, startTestIdp, wrapResponse } = loadTestIdp();
  const idp = await startTestIdp('benchidp');
  const load = [os.loadavg()[0]];
  // The SP endpoints count against the per-ip anonymous budget (every virtual browser is 127.0.0.1 here).
  const profileDir = PROFILE ? fs.mkdtempSync(path.join(os.tmpdir(), 'secsvc-bench-sso-prof-')) : undefined;
  const { stack, stop } = await startBenchStack({ RATE_LIMIT_ANONYMOUS_PER_MINUTE: '1000000' }, PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : undefined);
  const pids = { gateway: stack.pid('gateway'), identity: stack.pid('identity') };
  const report = [];
  // CPU time the gateway and identity spent per login (or ACS request) of a row.
  const cpuNow = () => [cpuMs(pids.gateway), cpuMs(pids.identity)];
  const cpuPer = (before, count) => cpuNow().map((t, i) => ms((t - before[i]) / count)).join(' / ');
  const origin = stack.baseUrl.replace(/\/v1$/, '');
  const api = (method, p, body) =>
    fetch(`${stack.baseUrl}${p}`, { method, headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' }, body: JSON.stringify(body) }).then(async (r) => {
      const json = await r.json();
      if (r.status >= 300) throw new Error(`${method} ${p}: ${r.status} ${JSON.stringify(json)}`);
      return json.data;
    });
  const identityClient = createClient(identity.IdentityServiceClient, stack.grpc.identity);
  const rpc = promiseClient(identityClient, { deadlineMs: 10_000 });
  try {
    const spKeys = { privateKey: fs.readFileSync(stack.samlSp.keyFile, 'utf8'), certificate: fs.readFileSync(stack.samlSp.certFile, 'utf8') };
    const sp = await api('POST', '/sso/connections', { name: 'Bench SP-initiated', idpMetadataXml: idp.metadata(), domains: ['sp.bench.example.com'] });
    const unsolicited = await api('POST', '/sso/connections', { name: 'Bench IdP-initiated', idpMetadataXml: idp.metadata(), domains: ['idp.bench.example.com'], allowIdpInitiated: true });

    // 1. SP-initiated logins: each step timed as the browser sees it.
    const spLogin = async (email, steps) => {
      const t0 = performance.now();
      const login = await fetch(`${sp.sp.loginUrl}?relayState=bench`, { redirect: 'manual' });
      await login.arrayBuffer();
      if (login.status !== 302) throw new Error(`login: ${login.status}`);
      const t1 = performance.now();
      const request = inflateRawSync(Buffer.from(new URL(login.headers.get('location')).searchParams.get('SAMLRequest'), 'base64')).toString('utf8');
      const requestId = /ID="([^"]+)"/.exec(request)[1];
      const cookie = login.headers.get('set-cookie').split(';')[0];
      const t2 = performance.now();
      const samlResponse = idp.response({ acsUrl: sp.sp.acsUrl, audience: sp.sp.entityId, email, inResponseTo: requestId });
      const t3 = performance.now();
      const acs = await fetch(sp.sp.acsUrl, { method: 'POST', headers: FORM, body: new URLSearchParams({ SAMLResponse: samlResponse, RelayState: 'bench' }), redirect: 'manual' });
      const acsBody = await acs.text();
      if (acs.status !== 303) throw new Error(`acs: ${acs.status} ${acsBody}`);
      const t4 = performance.now();
      const done = await fetch(acs.headers.get('location'), { redirect: 'manual', headers: { cookie } });
      const body = await done.json();
      if (done.status !== 200 || !body.data.token) throw new Error(`continue: ${done.status} ${JSON.stringify(body)}`);
      const t5 = performance.now();
      if (!steps) return;
      steps.login.push(t1 - t0);
      steps.idp.push(t3 - t2);
      steps.acs.push(t4 - t3);
      steps.continue.push(t5 - t4);
      steps.whole.push(t1 - t0 + (t5 - t3));
    };
    const returning = (w) => `returning${w}@sp.bench.example.com`;
    let fresh = 0;
    const newEmail = () => `new${fresh++}@sp.bench.example.com`;
    // Warm-up (JIT, pools); it also makes the returning users, one per virtual browser.
    await forSeconds(Math.max(...BROWSERS, JIT_BROWSERS), 3, (w) => spLogin(returning(w)));

    const spRows = [];
    // By number of browsers (the JIT row right after the returning row of as many browsers, for comparison).
    const spRuns = [...BROWSERS.map((n) => [n, 'returning']), [JIT_BROWSERS, 'new (JIT)']].sort((x, y) => x[0] - y[0]);
    for (const [n, users] of spRuns) {
      const steps = { login: [], idp: [], acs: [], continue: [], whole: [] };
      const cpu = cpuNow();
      const r = await forSeconds(n, duration, (w) => spLogin(users === 'returning' ? returning(w) : newEmail(), steps));
      spRows.push(
        `| ${n} | ${users} | ${r.done} | **${Math.round(r.perSecond)}** | ${pcts(steps.login)} | ${pcts(steps.acs)} | ${pcts(steps.continue)} | **${pcts(steps.whole)}** | ${cpuPer(cpu, r.done)} | ${ms(stats(steps.idp).p50)} |`,
      );
    }
    load.push(os.loadavg()[0]);

    // 2. IdP-initiated ACS alone: responses signed (and encrypted) before the timed loop.
    const acsUrl = unsolicited.sp.acsUrl;
    const audience = unsolicited.sp.entityId;
    const unsolicitedEmail = (i) => `user${i % 50}@idp.bench.example.com`;
    const signedResponse = (i) => idp.response({ acsUrl, audience, email: unsolicitedEmail(i) });
    const encryptedResponse = async (i) => {
      const now = new Date();
      const o = { acsUrl, audience, email: unsolicitedEmail(i) };
      const id = samlId();
      const signed = signAssertion(assertionXml(idp.entityId, o, id, now), id, idp.privateKey, idp.certificate);
      return Buffer.from(wrapResponse(idp.entityId, o, await encryptAssertion(signed, spKeys.certificate), now)).toString('base64');
    };
    const postAcs = async (samlResponse) => {
      const r = await fetch(acsUrl, { method: 'POST', headers: FORM, body: new URLSearchParams({ SAMLResponse: samlResponse, RelayState: 'bench' }) });
      const body = await r.json();
      if (r.status !== 200 || !body.data.token) throw new Error(`acs: ${r.status} ${JSON.stringify(body)}`);
    };
    // Warm-up, and the 50 users made.
    for (let i = 0; i < 50; i++) await postAcs(signedResponse(i));
    for (let i = 0; i < 20; i++) await postAcs(await encryptedResponse(i));

    const acsRows = [];
    for (const [kind, make] of [
      ['signed', signedResponse],
      ['signed + encrypted', encryptedResponse],
    ]) {
      for (const concurrency of [1, ACS_CONCURRENCY]) {
        const signStart = performance.now();
        const responses = [];
        for (let i = 0; i < ACS_RESPONSES; i++) responses.push(await make(i));
        const signMs = (performance.now() - signStart) / ACS_RESPONSES;
        const latencies = [];
        let next = 0;
        const cpu = cpuNow();
        const r = await forSeconds(concurrency, duration, async () => {
          if (next >= responses.length) return false;
          const samlResponse = responses[next++];
          const t = performance.now();
          await postAcs(samlResponse);
          latencies.push(performance.now() - t);
        });
        const s = stats(latencies);
        const usedUp = next >= responses.length ? ' (all used up before the time)' : '';
        acsRows.push(`| ${kind} | ${concurrency} | ${s.n}${usedUp} | **${Math.round(r.perSecond)}** | ${ms(s.p50)} | ${ms(s.p95)} | ${ms(s.p99)} | ${cpuPer(cpu, s.n)} | ${ms(signMs)} |`);
      }
    }
    load.push(os.loadavg()[0]);

    // 3. Where the time goes: the pieces of the SP endpoints one at a time (no concurrent load).
    const connection = await rpc.getSsoConnection({ environment: '', id: unsolicited.id, anyEnvironment: true });
    const settings = { baseUrl: origin, keys: spKeys, clockSkewMs: 60_000, requestTtlSeconds: 600 };
    const pieces = [];
    const piece = async (name, fn, note = '') => pieces.push(`| ${name} | ${pcts(await timed(SPLIT_RUNS, fn))} | ${note} |`);
    const samples = Array.from({ length: SPLIT_RUNS + 20 }, (_, i) => signedResponse(i));
    const encrypted = [];
    for (let i = 0; i < SPLIT_RUNS + 20; i++) encrypted.push(await encryptedResponse(i));
    const sampleXml = decodeResponse(samples[0]);
    const sampleDoc = new DOMParser().parseFromString(sampleXml, 'text/xml');
    const signatureNode = sampleDoc.getElementsByTagNameNS('http://www.w3.org/2000/09/xmldsig#', 'Signature')[0];

    await piece('test IdP: sign a response (not part of any ACS figure)', (i) => signedResponse(i));
    await piece('test IdP: sign and encrypt a response (idem)', (i) => encryptedResponse(i));
    await piece('/login: node-saml AuthnRequest, signed RSA-SHA256 with the SP key (RSA 3072)', () => samlFor(connection, settings, NO_REQUESTS).getAuthorizeUrlAsync('bench', undefined, {}));
    await piece('/acs: base64 decode, DTD/comment check, Destination and InResponseTo (xmldom parse)', (i) => checkResponseRoot(decodeResponse(samples[i]), acsUrl));
    await piece('/acs: node-saml validatePostResponse, signed assertion', (i) => validateResponse(connection, settings, ANY_REQUEST, samples[i], false), 'xmldom parse, XML-DSig (xml-crypto), Issuer, Audience, conditions');
    await piece('  of which xml-crypto checkSignature alone (one certificate)', () => {
      const sig = new SignedXml({ publicCert: idp.certificate });
      sig.loadSignature(signatureNode);
      if (!sig.checkSignature(sampleXml)) throw new Error('signature');
    });
    await piece('/acs: node-saml validatePostResponse, encrypted assertion', (i) => validateResponse(connection, settings, ANY_REQUEST, encrypted[i], true), 'RSA-OAEP with the SP key, AES-256-GCM');
    const assertion = (await validateResponse(connection, settings, ANY_REQUEST, samples[1], false)).profile.getAssertionXml();
    await piece('/acs: assertionFacts (Issuer, Recipient, expiry)', () => assertionFacts(assertion, { acsUrl, issuer: connection.idpEntityId }, 60_000));
    await piece('HTTP: GET /healthz from this process (the floor of any request)', async () => (await fetch(`${origin}/healthz`)).arrayBuffer());
    const call = { headers: { 'x-client-ip': '127.0.0.1', 'x-user-agent': 'bench', 'x-auth-method': 'saml' } };
    await piece('gRPC GetSsoConnection (every SP endpoint, once)', () => rpc.getSsoConnection({ environment: '', id: unsolicited.id, anyEnvironment: true }, call));
    await piece('gRPC SaveSamlRequest (/login)', () => rpc.saveSamlRequest({ requestId: samlId(), ttlSeconds: 600, connectionId: sp.id, returnTo: '', binding: '' }, call));
    await piece('gRPC TakeSamlRequest (/acs of an SP-initiated login)', () => rpc.takeSamlRequest({ requestId: samlId() }, call), 'an unknown id: the DELETE finds nothing');
    const complete = (email) =>
      rpc.completeSamlLogin(
        { connectionId: unsolicited.id, assertionId: samlId(), assertionExpiresAt: new Date(Date.now() + 300_000).toISOString(), nameId: email, nameIdFormat: '', sessionIndex: '', email, name: '', ip: '127.0.0.1', userAgent: 'bench', expiresInSeconds: 0 },
        call,
      );
    // Returning and new users alternate, so both see the same moments of this shared machine.
    let jit = 0;
    const logins = await timed(2 * SPLIT_RUNS, (i) => complete(i % 2 ? `split${jit++}@idp.bench.example.com` : 'user1@idp.bench.example.com'));
    pieces.push(`| gRPC CompleteSamlLogin, returning user (/continue, IdP-initiated /acs) | ${pcts(logins.filter((_, i) => i % 2 === 0))} | alternating with the next row |`);
    pieces.push(`| gRPC CompleteSamlLogin, new user (JIT) | ${pcts(logins.filter((_, i) => i % 2 === 1))} | |`);
    // What one PostgreSQL round trip and one commit cost here (identity's transactions end in a commit, fsync on).
    const db = new pg.Client({ connectionString: stack.databaseUrl });
    await db.connect();
    try {
      await db.query('CREATE TABLE bench_sso_commit (id bigserial PRIMARY KEY)');
      await piece('PostgreSQL from this process: SELECT 1', () => db.query('SELECT 1'));
      await piece('PostgreSQL from this process: one-row INSERT, committed', () => db.query('INSERT INTO bench_sso_commit DEFAULT VALUES'), 'waits for the WAL flush (fsync=on)');
    } finally {
      await db.end();
    }
    load.push(os.loadavg()[0]);

    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: path.join(__dirname, '..') }).toString().trim();
    report.push(
      `### ${machine()}, commit ${commit}, load average ${load.map((l) => l.toFixed(1)).join(' → ')}`,
      '',
      `\`npm run bench:sso\` (BENCH_DURATION=${duration}${PROFILE ? ', BENCH_CPU_PROFILE=1: every app under the profiler' : ''}).`,
      '',
      `SP-initiated logins, ${duration} s per row (ms as p50 / p95 / p99; "whole" = /login + /acs + /continue, without the IdP's signing):`,
      '',
      '| browsers | users | logins | logins/s | GET /login | POST /acs | GET /continue | whole | CPU ms/login gateway / identity | IdP signing p50 |',
      '|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|',
      ...spRows,
      '',
      `IdP-initiated \`POST /acs\` alone (responses signed before the loop; at most ${ACS_RESPONSES} per row, ${duration} s):`,
      '',
      '| assertion | in flight | requests | req/s | p50 ms | p95 ms | p99 ms | CPU ms/request gateway / identity | IdP side ms/response (excluded) |',
      '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
      ...acsRows,
      '',
      `Where the time goes: each piece ${SPLIT_RUNS} times in a row after 20 unmeasured (this process runs the gateway's code from apps/gateway/dist; gRPC calls go to the stack's identity):`,
      '',
      '| piece | p50 / p95 / p99 ms | note |',
      '|---|---:|---|',
      ...pieces,
    );
  } finally {
    identityClient.close();
    await stop();
  }
  if (profileDir) {
    // Each app writes its profile when it exits, named after its pid.
    const files = fs.readdirSync(profileDir);
    report.push('', 'CPU profile (busy time over the whole run, ten largest shares of it):', '');
    for (const [app, pid] of Object.entries(pids)) {
      const file = files.find((f) => f.includes(`.${pid}.`));
      report.push(`- ${app}: ${file ? profileShares(path.join(profileDir, file)) : 'no profile written'}`);
    }
    fs.rmSync(profileDir, { recursive: true, force: true });
  }
  console.log(report.join('\n'));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
