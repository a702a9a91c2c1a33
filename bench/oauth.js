#!/usr/bin/env node
// bench/oauth: the OAuth token endpoint (client_credentials grants, authorization_code exchanges and
// refresh_token rotations, grants/s) and token introspection (req/s, p99, including expired tokens, the same
// one repeated and each one first seen) through the gateway of the full local stack, with the CPU each
// process spent per request (from /proc: the stable figure on a busy machine). Run after `npm run build`:
//   npm run bench:oauth
// BENCH_GRANTS (codes per round, default 2000), BENCH_ROUNDS (default 3), BENCH_CONNECTIONS (default 50),
// BENCH_DURATION (introspection seconds, default 15), BENCH_EXPIRED (distinct expired tokens, default 2000).
const { OAUTH_REDIRECT: REDIRECT, cpuMs, load, machine, median, pool, productOAuth, settle, startBenchStack } = require('./support');

const GRANTS = Number(process.env.BENCH_GRANTS ?? 2000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
const duration = Number(process.env.BENCH_DURATION ?? 15);

async function main() {
  // Every OAuth endpoint counts against the per-ip anonymous budget: lifted for the load of one machine.
  // Access tokens live 60 s (the least allowed), so tokens minted first are expired (past the 60 s leeway)
  // by the time introspection is measured.
  // GATEWAY_WORKERS, when set, is passed on (1: one gateway process, as before the gateway ran on every core).
  const workers = process.env.GATEWAY_WORKERS ? { GATEWAY_WORKERS: process.env.GATEWAY_WORKERS } : {};
  const { stack, stop } = await startBenchStack({ RATE_LIMIT_ANONYMOUS_PER_MINUTE: '1000000', ACCESS_TOKEN_TTL_SECONDS: '60', ...workers });
  try {
    const { origin, form, app, rs, basic, newCode } = await productOAuth(stack);
    const pids = { gateway: stack.pid('gateway'), identity: stack.pid('identity'), postgres: stack.pid('postgres'), audit: stack.pid('audit') };
    const names = Object.keys(pids);
    /** Runs `run` once the stack is idle; its result and the CPU ms each process spent per request (`count(result)` requests). */
    const measured = async (run, count) => {
      await settle(pids);
      const before = cpuMs(pids);
      const result = await run();
      const after = cpuMs(pids);
      const n = count(result);
      return { result, cpu: Object.fromEntries(names.map((k) => [k, (after[k] - before[k]) / n])) };
    };
    const cpuCells = (cpu) => names.map((k) => cpu[k].toFixed(2)).join(' | ');
    const cpuTotal = (cpu) => names.reduce((sum, k) => sum + cpu[k], 0).toFixed(2);
    const clientCredentials = async () => {
      const r = await form('/oauth/token', { grant_type: 'client_credentials', scope: 'read:users' }, { authorization: basic(rs) });
      const body = await r.json();
      if (r.status !== 200) throw new Error(`client_credentials: ${r.status} ${JSON.stringify(body)}`);
      return body.access_token;
    };
    const expiring = [];
    await pool(Number(process.env.BENCH_EXPIRED ?? 2000), 20, async () => expiring.push(await clientCredentials()));
    const expiresAt = Date.now() + 125_000;

    const rows = [];
    const exchange = [];
    const refresh = [];
    const credentials = [];
    const cpuOf = { client_credentials: [], authorization_code: [], refresh_token: [] };
    let accessToken;
    let refreshTokenForIntrospection;
    for (let round = 0; round < ROUNDS; round++) {
      const cc = await measured(() => pool(GRANTS, connections, clientCredentials), () => GRANTS);
      credentials.push(cc.result);
      cpuOf.client_credentials.push(cc.cpu);
      // Codes live 60 s: each round makes its codes, then exchanges them at once (measured).
      const codes = [];
      const made = await pool(GRANTS, 20, async () => codes.push(await newCode()));
      const refreshTokens = [];
      const { result: ex, cpu: exCpu } = await measured(() => pool(GRANTS, connections, async (i) => {
        const r = await form('/oauth/token', { grant_type: 'authorization_code', code: codes[i], redirect_uri: REDIRECT }, { authorization: basic(app) });
        const body = await r.json();
        if (r.status !== 200) throw new Error(`exchange: ${r.status} ${JSON.stringify(body)}`);
        refreshTokens.push(body.refresh_token);
      }), () => GRANTS);
      const { result: rf, cpu: rfCpu } = await measured(() => pool(GRANTS, connections, async (i) => {
        const r = await form('/oauth/token', { grant_type: 'refresh_token', refresh_token: refreshTokens[i] }, { authorization: basic(app) });
        const body = await r.json();
        if (r.status !== 200) throw new Error(`refresh: ${r.status} ${JSON.stringify(body)}`);
        refreshTokenForIntrospection = body.refresh_token;
      }), () => GRANTS);
      exchange.push(ex);
      refresh.push(rf);
      cpuOf.authorization_code.push(exCpu);
      cpuOf.refresh_token.push(rfCpu);
      rows.push(
        `| ${round + 1} | ${Math.round(cc.result.perSecond)} | ${cc.result.p99.toFixed(1)} | ${Math.round(made.perSecond)} | ${Math.round(ex.perSecond)} | ${ex.p50.toFixed(1)} | ${ex.p99.toFixed(1)} | ${Math.round(rf.perSecond)} | ${rf.p50.toFixed(1)} | ${rf.p99.toFixed(1)} |`,
      );
    }
    // CPU per grant: each process's median over the rounds.
    const grantCpuRows = Object.entries(cpuOf).map(([grant, runs]) => {
      const cpu = Object.fromEntries(names.map((k) => [k, median(runs.map((c) => c[k]))]));
      return `| ${grant} | ${cpuCells(cpu)} | ${cpuTotal(cpu)} |`;
    });

    // The tokens minted first must be past exp + leeway; the active one is minted now.
    await new Promise((r) => setTimeout(r, Math.max(0, expiresAt - Date.now())));
    accessToken = await clientCredentials();

    const introspect = (token) => ({
      url: `${origin}/oauth/introspect`,
      method: 'POST',
      headers: { authorization: basic(rs), 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token }).toString(),
    });
    await load({ connections, duration: 3, ...introspect(accessToken) }); // warm-up
    // Each request a token not seen before (as long as the distinct ones last, then again from the first).
    let nextExpired = 0;
    const firstSeen = {
      ...introspect(expiring[0]),
      requests: [{ setupRequest: (req) => ({ ...req, body: new URLSearchParams({ token: expiring[nextExpired++ % expiring.length] }).toString() }) }],
    };
    const cases = [
      ['GET /healthz (gateway ceiling)', { url: `${origin}/healthz` }],
      ['POST /oauth/introspect, access token (answered at the gateway)', introspect(accessToken)],
      ['POST /oauth/introspect, one expired access token repeated', introspect(expiring[0])],
      [`POST /oauth/introspect, expired access tokens (${expiring.length} distinct, in turn)`, firstSeen],
      ['POST /oauth/introspect, refresh token (asks identity)', introspect(refreshTokenForIntrospection)],
    ];
    const introRows = [];
    for (const [name, opts] of cases) {
      const { result: r, cpu } = await measured(() => load({ connections, duration, ...opts }), (res) => res.requests.total);
      introRows.push(`| ${name} | ${Math.round(r.requests.average)} | ${r.latency.p50} | ${r.latency.p99} | ${r.non2xx} | ${cpuCells(cpu)} | ${cpuTotal(cpu)} |`);
    }
    console.log(
      [
        `### ${machine()}`,
        '',
        `\`npm run bench:oauth\`: ${ROUNDS} rounds of ${GRANTS} client_credentials grants, then ${GRANTS} codes (made by GET /oauth/authorize with a logged-in session, 20 in flight),`,
        `each exchanged (authorization_code, client_secret_basic) and its refresh token rotated once (refresh_token), ${connections} in flight;`,
        `introspection with autocannon, ${connections} connections, ${duration} s each. CPU: ms per request per process (from /proc, with children).`,
        '',
        '| round | client_credentials/s | p99 ms | codes made/s | code exchanges/s | p50 ms | p99 ms | refreshes/s | p50 ms | p99 ms |',
        '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
        ...rows,
        '',
        `Median: **${Math.round(median(credentials.map((x) => x.perSecond)))} client_credentials grants/s**, **${Math.round(median(exchange.map((x) => x.perSecond)))} code exchanges/s**, **${Math.round(median(refresh.map((x) => x.perSecond)))} refreshes/s**.`,
        '',
        `| grant (CPU ms per grant, median of rounds) | ${names.join(' | ')} | total |`,
        `|---|${names.map(() => '---:|').join('')}---:|`,
        ...grantCpuRows,
        '',
        `| case | req/s (mean) | p50 ms | p99 ms | non-2xx | ${names.map((k) => `${k} CPU ms`).join(' | ')} | total |`,
        `|---|---:|---:|---:|---:|${names.map(() => '---:|').join('')}---:|`,
        ...introRows,
      ].join('\n'),
    );
  } finally {
    await stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
