#!/usr/bin/env node
// bench/peers: the product against Ory Hydra v2.3.0 on the OAuth hot path, and GET /v1/users/{id} against the
// bare chain (bare-chain.js), measured side by side in interleaved rounds on one machine. Run after
// `npm run build`:   npm run bench:peers
// Hydra (install-hydra.sh, built once) runs on the product's own embedded PostgreSQL server, in a database of
// its own. BENCH_ROUNDS (default 3), BENCH_DURATION (seconds of each timed case, default 5), BENCH_GRANTS
// (codes per round and side, default 1000), BENCH_CONNECTIONS (default 50), BENCH_NOTE (a sentence added to the
// section, e.g. what else used the machine). Writes the section "Peers: Ory Hydra v2.3.0" of bench/RESULTS.md.
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const pg = require('pg');
const { KEY, OAUTH_REDIRECT, cpuMs, load, machine, median, pool, productOAuth, settle, startBenchStack } = require('../support');
const { hydraOAuth, installHydra, startHydra } = require('./hydra');

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const DURATION = Number(process.env.BENCH_DURATION ?? 5);
const GRANTS = Number(process.env.BENCH_GRANTS ?? 1000);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
const SECTION = '## Peers: Ory Hydra v2.3.0';
const RESULTS = path.join(__dirname, '..', 'RESULTS.md');

const FORM = 'application/x-www-form-urlencoded';
const formBody = (fields) => new URLSearchParams(fields).toString();

const stopChild = (child) => new Promise((resolve) => (child.exitCode !== null ? resolve() : (child.once('exit', resolve), child.kill())));

/** Starts one role of the bare chain; resolves with its process and port once it listens. */
function startBare(role, env) {
  const child = spawn(process.execPath, [path.join(__dirname, 'bare-chain.js'), role], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`bare chain ${role} exited (${code})`)));
    child.stdout.on('data', (d) => {
      const m = /listening (\d+)/.exec(d.toString());
      if (m) resolve({ child, port: Number(m[1]) });
    });
  });
}

/**
 * One timed run with autocannon: `duration` seconds of the same request, or one request per item of `bodies`
 * (a body each) or of `each` (headers each). `check(status, body)` sees every response (bodies are kept only when
 * it is given). Requests/s from the wall time, p99 from autocannon's histogram, and every answer other than
 * `expect` (undefined: any 2xx) an error.
 */
async function cannon({ url, method = 'GET', headers = {}, body, bodies, each = bodies?.map((b) => ({ body: b })), check, expect }) {
  let i = 0;
  let lastAt;
  let unexpected = 0;
  let firstUnexpected = '';
  const request = {
    ...(each ? { setupRequest: (req) => ((req = { ...req, ...each[i++ % each.length] }), { ...req, headers: { ...headers, ...req.headers } }) } : {}),
    // A run of `amount` requests ends at autocannon's next 1 s tick: its time is up to the last response.
    ...(check || each || expect
      ? {
          onResponse: (status, resBody) => {
            lastAt = performance.now();
            if (expect && status !== expect && unexpected++ === 0) firstUnexpected = `${status} ${resBody ?? ''}`.slice(0, 300);
            check?.(status, resBody);
          },
        }
      : {}),
  };
  const t = performance.now();
  const r = await load({ url, method, headers, body, connections: Math.min(connections, each?.length ?? connections), ...(each ? { amount: each.length } : { duration: warming ? 2 : DURATION }), requests: [request] });
  const seconds = ((each ? lastAt : performance.now()) - t) / 1000;
  const wrong = expect ? unexpected : r.non2xx;
  if (wrong || r.errors || r.timeouts) throw new Error(`${method} ${url}: ${wrong} answers not ${expect ?? '2xx'}, ${r.errors} errors, ${r.timeouts} timeouts${firstUnexpected && ` (first: ${firstUnexpected})`}`);
  return { requests: r.requests.total, perSecond: r.requests.total / seconds, p99: r.latency.p99 };
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
/** A JWT's `exp` (seconds), read without verifying it. */
const expOf = (jwt) => JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url')).exp;

/** Busy CPU ms of the whole machine so far (/proc/stat), to tell how much other work shared it. */
function machineBusyMs() {
  const [, ...f] = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).map(Number);
  const busy = f[0] + f[1] + f[2] + f[5] + f[6] + f[7]; // user nice system irq softirq steal
  return busy * 10;
}

const round1 = (x) => (x >= 100 ? Math.round(x).toLocaleString('en-US') : x.toFixed(x >= 10 ? 0 : 2));

async function main() {
  installHydra();
  const loadBefore = os.loadavg();
  // Every OAuth endpoint counts against the per-ip anonymous budget: lifted for the load of one machine.
  // Access tokens live 60 s, the least the product allows (and Hydra's introspected ones 1 minute), so that
  // tokens minted at the start have expired by the time the expired-token cases run.
  const { stack, stop } = await startBenchStack({ RATE_LIMIT_ANONYMOUS_PER_MINUTE: '1000000', ACCESS_TOKEN_TTL_SECONDS: '60' });
  const stops = [stop];
  try {
    const product = await productOAuth(stack);
    // JWT access tokens as the product's, signed with ES256 as the product's: the like-for-like peer. With JWT
    // access tokens a token request holds a transaction while it takes a second connection (the signing key):
    // Hydra's default pool (2 per core) deadlocks under load, so these get 2 per load connection.
    const jwtPool = connections * 2;
    const hydraConfigs = {
      hydra: { label: 'Hydra: JWT ES256, pbkdf2 1 iteration (like for like)', iterations: 1, maxConns: jwtPool, signingAlg: 'ES256', accessTokenTtl: '1m' },
      hydraDefault: { label: 'Hydra: JWT ES256, pbkdf2 25,000 iterations (its default)', iterations: undefined, maxConns: jwtPool, signingAlg: 'ES256' },
      hydraRsa: { label: 'Hydra: JWT with its generated RS256 key (RSA 4,096), pbkdf2 1', iterations: 1, maxConns: jwtPool },
      hydraOpaque: { label: 'Hydra: opaque tokens (its default), default pool, pbkdf2 1', iterations: 1, accessTokens: 'opaque', accessTokenTtl: '1m' },
    };
    const hydras = {};
    for (const [side, { label, ...opts }] of Object.entries(hydraConfigs)) {
      const server = await startHydra({ databaseUrl: stack.databaseUrl, database: side.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`), ...opts });
      stops.unshift(() => server.stop());
      hydras[side] = { label, server, oauth: await hydraOAuth(server, OAUTH_REDIRECT) };
    }

    // The bare chain reads the row the product serves.
    const user = (await product.api('POST', '/users', { email: 'bench.peers@example.com', name: 'Bench', roles: ['role_member'], metadata: { team: 'perf' } })).data;
    const db = new pg.Client({ connectionString: stack.databaseUrl });
    await db.connect();
    const { rows: [{ environment }] } = await db.query('SELECT environment FROM identity.users WHERE id = $1', [user.id]);
    await db.end();
    const bareGrpc = await startBare('grpc', { DATABASE_URL: stack.databaseUrl });
    stops.unshift(() => stopChild(bareGrpc.child));
    const bareHttp = await startBare('http', { GRPC_TARGET: `127.0.0.1:${bareGrpc.port}`, USER_ENVIRONMENT: environment });
    stops.unshift(() => stopChild(bareHttp.child));
    // The same front with as many processes as the gateway runs (GATEWAY_WORKERS, default the number of cores).
    const gatewayWorkers = Number(process.env.GATEWAY_WORKERS || os.cpus().length);
    const bareCluster = gatewayWorkers > 1 ? await startBare('http', { GRPC_TARGET: `127.0.0.1:${bareGrpc.port}`, USER_ENVIRONMENT: environment, BARE_WORKERS: String(gatewayWorkers) }) : undefined;
    if (bareCluster) stops.unshift(() => stopChild(bareCluster.child));

    const postgres = stack.pid('postgres');
    const productPids = { gateway: stack.pid('gateway'), identity: stack.pid('identity'), policy: stack.pid('policy'), audit: stack.pid('audit'), 'export-worker': stack.pid('export-worker'), PostgreSQL: postgres };
    const sides = {
      product: { label: 'product', pids: productPids, tokenUrl: `${product.origin}/oauth/token`, client: product },
      bare: { label: 'bare Express 5 → grpc-js → pg', pids: { 'bare HTTP': bareHttp.child.pid, 'bare gRPC': bareGrpc.child.pid, PostgreSQL: postgres } },
      ...(bareCluster && {
        bareCluster: {
          label: `bare Express 5 in ${gatewayWorkers} cluster workers (as many as the gateway's) → grpc-js → pg`,
          pids: { 'bare HTTP': bareCluster.child.pid, 'bare gRPC': bareGrpc.child.pid, PostgreSQL: postgres },
        },
      }),
    };
    for (const [side, h] of Object.entries(hydras))
      sides[side] = { label: h.label, pids: { Hydra: h.server.pid, PostgreSQL: postgres }, tokenUrl: `${h.server.public}/oauth2/token`, client: h.oauth, admin: h.server.admin };
    const tokenJson = (collect) => (status, body) => {
      if (status === 200) collect.push(JSON.parse(body));
    };
    // What each case keeps between its runs: tokens for introspection, codes, refresh tokens for rotation.
    const kept = Object.fromEntries(Object.keys(sides).map((side) => [side, {}]));
    const introspect = (side, tokens, active = true) => {
      const said = `"active":${active}`;
      const check = (status, body) => {
        if (!body.includes(said)) throw new Error(`${side}: introspection said ${body}`);
      };
      const bodies = tokens.map((token) => formBody({ token }));
      return side === 'product'
        ? { url: `${product.origin}/oauth/introspect`, method: 'POST', headers: { authorization: product.basic(product.rs), 'content-type': FORM }, bodies, check }
        : { url: `${sides[side].admin}/admin/oauth2/introspect`, method: 'POST', headers: { 'content-type': FORM }, bodies, check };
    };
    /**
     * `n` access tokens (client_credentials, scope read:users) of the resource server, or of `clients` in turn,
     * issued 50 at a time.
     */
    const mint = async (side, n, clients = [sides[side].client.rs]) => {
      const c = sides[side].client;
      const issued = [];
      const body = formBody({ grant_type: 'client_credentials', scope: 'read:users' });
      const each = Array.from({ length: n }, (_, i) => ({ headers: { authorization: c.basic(clients[i % clients.length]) }, body }));
      await cannon({ url: sides[side].tokenUrl, method: 'POST', headers: { 'content-type': FORM }, each, check: tokenJson(issued) });
      if (issued.length !== n) throw new Error(`${side}: ${issued.length} of ${n} tokens issued`);
      return issued.map((t) => t.access_token);
    };
    // An OAuth client calls the API on the pro plan's budget (1,000 requests a minute, a burst of as many): the
    // first-seen API calls of a run spread over 4 clients, each under its budget, refilled between rounds.
    const apiClients = [];
    for (let k = 0; k < 4; k++) apiClients.push((await product.api('POST', '/oauth/clients', { name: `API caller ${k}`, type: 'confidential', redirectUris: [], scopes: ['read:users'] })).data);
    // Tokens judged once each: FIRST_SEEN per run (a tenth in the warm-up).
    const FIRST_SEEN = 3000;
    const perRun = () => (warming ? FIRST_SEEN / 10 : FIRST_SEEN);
    // Expired tokens, each judged once: minted now for every run of the two expired cases (each case its own, so
    // that neither sees a token the other judged), expired once `expiresAt` (ms) has passed. The product's
    // gateway allows 60 s of leeway past `exp`; Hydra none; an opaque token's expiry is read from the time it
    // was minted.
    const expiring = {};
    const expiredSides = ['product', 'hydra', 'hydraOpaque'];
    for (const side of expiredSides) {
      const tokens = await mint(side, (side === 'product' ? 2 : 1) * (FIRST_SEEN / 10 + ROUNDS * FIRST_SEEN));
      const lastExp = Math.max(...tokens.map((t) => (side === 'hydraOpaque' ? Date.now() / 1000 + 60 : expOf(t))));
      expiring[side] = { tokens, expiresAt: (lastExp + (side === 'product' ? 60 : 0) + 1) * 1000 };
    }
    const expired = async (side) => {
      const { tokens, expiresAt } = expiring[side];
      if (tokens.length < perRun()) throw new Error(`${side}: expired tokens ran out`);
      if (Date.now() < expiresAt) {
        console.error(`${side}: waiting ${Math.ceil((expiresAt - Date.now()) / 1000)} s for the tokens minted first to expire`);
        await sleep(expiresAt - Date.now());
      }
      return tokens.splice(0, perRun());
    };
    const apiCall = (tokens, expect) =>
      cannon({ url: `${stack.baseUrl}/users/${user.id}`, each: tokens.map((t) => ({ headers: { authorization: `Bearer ${t}` } })), expect });
    const firstSeen = {
      name: `introspection, first-seen token (each once, ${FIRST_SEEN.toLocaleString('en-US')} minted just before)`,
      short: 'first-seen introspection',
      sides: ['product', 'hydra', 'hydraOpaque'],
      async prepare(side) {
        kept[side].fresh = await mint(side, perRun());
      },
      run: (side) => cannon(introspect(side, kept[side].fresh)),
    };
    const expiredIntrospection = {
      name: `introspection, expired token (each once, minted at the start; \`"active":false\`)`,
      short: 'expired-token introspection',
      sides: ['product', 'hydra', 'hydraOpaque'],
      async prepare(side) {
        kept[side].expired = await expired(side);
      },
      run: (side) => cannon(introspect(side, kept[side].expired, false)),
    };
    const cases = [
      {
        name: '`client_credentials` grant',
        sides: ['product', 'hydra', 'hydraOpaque', 'hydraDefault', 'hydraRsa'],
        async run(side) {
          const c = sides[side].client;
          const issued = [];
          const r = await cannon({
            url: sides[side].tokenUrl,
            method: 'POST',
            headers: { authorization: c.basic(c.rs), 'content-type': FORM },
            body: formBody({ grant_type: 'client_credentials', scope: 'read:users' }),
            check: tokenJson(issued),
          });
          const [head, , sig] = issued[0].access_token.split('.');
          const alg = sig ? JSON.parse(Buffer.from(head, 'base64url')).alg : 'opaque';
          const expected = { product: 'ES256', hydraRsa: 'RS256', hydraOpaque: 'opaque' }[side] ?? 'ES256';
          if (alg !== expected) throw new Error(`${side}: access token ${alg}, not ${expected}`);
          return r;
        },
      },
      firstSeen,
      {
        name: 'introspection, cached token (the same one again and again)',
        sides: ['product', 'hydra', 'hydraOpaque'],
        async prepare(side) {
          kept[side].cached = await mint(side, 1);
        },
        async run(side) {
          const opts = introspect(side, kept[side].cached);
          return cannon({ ...opts, bodies: undefined, body: opts.bodies[0] });
        },
      },
      {
        name: 'authorization-code exchange',
        sides: ['product', 'hydra'],
        // Codes made before the timed run, each through the server's own flow, 20 at a time.
        async prepare(side) {
          const codes = [];
          await pool(warming ? 100 : GRANTS, 20, async () => codes.push(await sides[side].client.newCode()));
          kept[side].codes = codes;
        },
        async run(side) {
          const c = sides[side].client;
          const issued = [];
          const r = await cannon({
            url: sides[side].tokenUrl,
            method: 'POST',
            headers: { authorization: c.basic(c.app), 'content-type': FORM },
            bodies: kept[side].codes.map((code) => formBody({ grant_type: 'authorization_code', code, redirect_uri: OAUTH_REDIRECT })),
            check: tokenJson(issued),
          });
          kept[side].refresh = issued.map((t) => t.refresh_token);
          if (kept[side].refresh.length !== kept[side].codes.length || !kept[side].refresh.every(Boolean)) throw new Error(`${side}: not every exchange gave a refresh token`);
          return r;
        },
      },
      {
        name: '`refresh_token` rotation',
        sides: ['product', 'hydra'],
        run(side) {
          const c = sides[side].client;
          return cannon({
            url: sides[side].tokenUrl,
            method: 'POST',
            headers: { authorization: c.basic(c.app), 'content-type': FORM },
            bodies: kept[side].refresh.map((t) => formBody({ grant_type: 'refresh_token', refresh_token: t })),
          });
        },
      },
      {
        name: '`GET /v1/users/{id}`',
        sides: ['product', 'bare', ...(bareCluster ? ['bareCluster'] : [])],
        run: (side) =>
          side === 'product'
            ? cannon({ url: `${stack.baseUrl}/users/${user.id}`, headers: { authorization: `Bearer ${KEY}` } })
            : cannon({ url: `http://127.0.0.1:${(side === 'bare' ? bareHttp : bareCluster).port}/v1/users/${user.id}` }),
      },
      {
        name: '`GET /v1/users/{id}` with a first-seen JWT (each token once)',
        sides: ['product'],
        // A resource server behind Hydra judges a token by introspecting it: the product's API call (the JWT
        // verified, the call authorized and answered) against Hydra's first-seen introspection of the same round.
        against: [
          [firstSeen, 'hydra'],
          [firstSeen, 'hydraOpaque'],
        ],
        async prepare(side) {
          kept[side].api = await mint(side, perRun(), apiClients);
        },
        run: (side) => apiCall(kept[side].api, 200),
      },
      expiredIntrospection,
      {
        name: '`GET /v1/users/{id}` with an expired JWT (each token once; 401)',
        sides: ['product'],
        against: [
          [expiredIntrospection, 'hydra'],
          [expiredIntrospection, 'hydraOpaque'],
        ],
        async prepare(side) {
          kept[side].expiredApi = await expired(side);
        },
        run: (side) => apiCall(kept[side].expiredApi, 401),
      },
    ];

    // Warm-up (JIT, pools, caches): every case once per side, not counted.
    console.error('warm-up');
    warming = true;
    for (const c of cases)
      for (const side of c.sides) {
        if (process.env.BENCH_VERBOSE) console.error(`warm-up: ${c.name} ${side}`);
        await c.prepare?.(side);
        await c.run(side);
      }

    const allPids = Object.assign({}, ...Object.values(sides).map((s) => s.pids));
    warming = false;
    measuredFrom = Date.now();
    const busyBefore = machineBusyMs();
    const oursBefore = cpuMs(allPids);
    const selfBefore = process.cpuUsage();
    const runs = new Map(cases.map((c) => [c, Object.fromEntries(c.sides.map((s) => [s, []]))]));
    for (let round = 0; round < ROUNDS; round++) {
      for (const c of cases) {
        // Alternate the order every round so neither side always runs first.
        for (const side of round % 2 ? [...c.sides].reverse() : c.sides) {
          const pids = sides[side].pids;
          await c.prepare?.(side);
          await settle(allPids);
          const before = cpuMs(pids);
          const r = await c.run(side);
          // The work a request leaves behind (audit events relayed and stored) counts too.
          await settle(pids);
          const after = cpuMs(pids);
          const cpu = Object.fromEntries(Object.keys(pids).map((k) => [k, (after[k] - before[k]) / r.requests]));
          runs.get(c)[side].push({ ...r, cpu });
          console.error(`round ${round + 1} ${c.name} ${side}: ${Math.round(r.perSecond)}/s p99 ${r.p99} ms, ${Object.values(cpu).reduce((a, b) => a + b, 0).toFixed(2)} CPU ms/request`);
        }
      }
    }
    const selfUsed = process.cpuUsage(selfBefore);
    const oursAfter = cpuMs(allPids);
    const busy = machineBusyMs() - busyBefore;
    const ours = Object.keys(oursAfter).reduce((sum, k) => sum + oursAfter[k] - oursBefore[k], 0) + (selfUsed.user + selfUsed.system) / 1000;
    const loadAfter = os.loadavg();

    const summary = (rs) => {
      const cpu = Object.fromEntries(Object.keys(rs[0].cpu).map((k) => [k, median(rs.map((r) => r.cpu[k]))]));
      return { perSecond: median(rs.map((r) => r.perSecond)), p99: median(rs.map((r) => r.p99)), cpu, cpuTotal: median(rs.map((r) => Object.values(r.cpu).reduce((a, b) => a + b, 0))), rounds: rs.map((r) => Math.round(r.perSecond)) };
    };
    const cpuText = (s) => `**${s.cpuTotal.toFixed(2)}** (${Object.entries(s.cpu).filter(([, v]) => v >= 0.005).map(([k, v]) => `${k} ${v.toFixed(2)}`).join(', ')})`;
    const rows = [];
    for (const c of cases) {
      const p = summary(runs.get(c).product);
      const peers = [...c.sides.slice(1).map((s) => [c, s]), ...(c.against ?? [])];
      for (const [pc, peerSide] of peers) {
        const q = summary(runs.get(pc)[peerSide]);
        const label = pc === c ? sides[peerSide].label : `${sides[peerSide].label}: its ${pc.short}`;
        rows.push(
          `| ${c.name} | ${label} | ${round1(p.perSecond)} | ${p.p99} | ${round1(q.perSecond)} | ${q.p99} | **${(p.perSecond / q.perSecond).toFixed(2)}** | ${cpuText(p)} | ${cpuText(q)} | ${p.rounds.join(', ')} / ${q.rounds.join(', ')} |`,
        );
      }
    }
    const seconds = (Date.now() - started) / 1000;
    const section = [
      SECTION,
      '',
      'Command: `npm run build && npm run bench:peers` (`bench/peers/`). Not part of `npm test`. The product is the local stack',
      '(`bench/support.js`); Ory Hydra v2.3.0 (`bench/peers/install-hydra.sh`, built once) runs `serve all --dev` on the',
      'same embedded PostgreSQL server, each configuration in a database of its own, public and admin on 127.0.0.1, log',
      "level error. The like-for-like peer issues JWT access tokens signed with ES256 as the product does (Hydra still",
      'stores them, for introspection and revocation) and hashes client secrets with pbkdf2 at 1 iteration (the product',
      `hashes a client secret once); its pool is ${'`max_conns`'} ${2 * connections} (2 per load connection: with JWT access tokens a token`,
      "request holds a transaction while it takes a second connection, and Hydra's default pool of 2 per core deadlocks",
      'once 4 requests are in flight). Other rows: the same with its default 25,000 pbkdf2 iterations; with the RS256',
      "(RSA 4,096) key Hydra generates itself; with opaque tokens (Hydra's default strategy) and its default pool.",
      "Clients authenticate with `client_secret_basic`; the product introspects at `/oauth/introspect` with the resource",
      "server's credentials, Hydra at its unauthenticated admin `/admin/oauth2/introspect`. Access tokens live 60 s in the",
      "product (its least; its gateway allows 60 s of leeway) and 1 minute in the two Hydras introspected, so the tokens",
      'minted at the start are expired (past the leeway) when the expired-token cases run; first-seen tokens are minted',
      'just before their run. An API call has no Hydra counterpart: a resource server behind Hydra judges a token by',
      "introspecting it, so API calls are set against Hydra's introspection of the same kind of token in the same round.",
      "A first-seen API call's tokens come from 4 clients in turn (an OAuth client calls on the pro plan's budget, 1,000 a",
      'minute); an expired token is refused before any budget but the anonymous one (lifted here).',
      'Codes come beforehand from each server\'s own flow (the product\'s login form session; Hydra through a minimal',
      'login and consent app accepting every challenge through the admin API). The bare chain (`bench/peers/bare-chain.js`)',
      "is Express 5 → grpc-js (the product's generated GetUser definition) → pg reading the same row with identity's query,",
      "without authentication, rate limit or logging; once as one process, once in as many cluster workers as the gateway's.",
      '',
      `### ${machine()}: ${ROUNDS} interleaved rounds (the order alternating), medians`,
      '',
      `${connections} connections (autocannon); timed cases ${DURATION} s, code exchange and refresh ${GRANTS} each. Ratio: product ÷ peer`,
      'requests/s. CPU: ms per request of each process and its children from `/proc/<pid>/stat` (utime + stime, with ended',
      "children's), read before and after each run once the side's processes are idle again (work a request leaves",
      "behind, such as audit events, counts); PostgreSQL is every postgres process of the shared server.",
      `Load average ${loadBefore.map((x) => x.toFixed(1)).join(' / ')} at the start, ${loadAfter.map((x) => x.toFixed(1)).join(' / ')} at the end;`,
      `other work used ${(Math.max(0, busy - ours) / 1000 / ((Date.now() - measuredFrom) / 1000)).toFixed(2)} of the ${os.cpus().length} cores on average during the rounds. Run time ${Math.round(seconds)} s.`,
      ...(process.env.BENCH_NOTE ? ['', process.env.BENCH_NOTE] : []),
      '',
      '| case | peer / ceiling | product req/s | p99 ms | peer req/s | p99 ms | ratio | CPU ms/request, product | CPU ms/request, peer | rounds req/s (product / peer) |',
      '|---|---|---:|---:|---:|---:|---:|---|---|---|',
      ...rows,
      '',
    ].join('\n');
    const text = fs.readFileSync(RESULTS, 'utf8');
    const at = text.indexOf(`${SECTION}\n`);
    let next = at < 0 ? -1 : text.indexOf('\n## ', at + SECTION.length);
    if (at >= 0 && next < 0) next = text.length;
    fs.writeFileSync(RESULTS, at < 0 ? `${text.trimEnd()}\n\n${section}` : `${text.slice(0, at)}${section}${text.slice(next)}`);
    console.log(section);
  } finally {
    for (const s of stops) await Promise.resolve().then(s).catch((err) => console.error(err));
  }
}

const started = Date.now();
let measuredFrom = Date.now();
let warming = false;
main().catch((err) => {
  console.error(err);
  process.exit(1);
});
