#!/usr/bin/env node
// bench/oauth: the OAuth token endpoint (authorization_code exchanges and refresh_token rotations, grants/s)
// and token introspection (req/s, p99) through the gateway of the full local stack. Run after `npm run build`:
//   npm run bench:oauth
// BENCH_GRANTS (codes per round, default 2000), BENCH_ROUNDS (default 3), BENCH_CONNECTIONS (default 50),
// BENCH_DURATION (introspection seconds, default 15).
const { KEY, load, machine, startBenchStack } = require('./support');

const GRANTS = Number(process.env.BENCH_GRANTS ?? 2000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
const duration = Number(process.env.BENCH_DURATION ?? 15);
const PASSWORD = 'correct horse battery staple';
const REDIRECT = 'https://app.example.com/callback';

/** Runs `task(i)` for i < n with `concurrency` in flight; per-task latencies in ms and the wall time. */
async function pool(n, concurrency, task) {
  const latencies = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(concurrency, n) }, async () => {
      while (next < n) {
        const i = next++;
        const t = performance.now();
        await task(i);
        latencies.push(performance.now() - t);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const pct = (p) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))];
  return { perSecond: n / seconds, p50: pct(50), p99: pct(99) };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main() {
  // Every OAuth endpoint counts against the per-ip anonymous budget: lifted for the load of one machine.
  const { stack, stop } = await startBenchStack({ RATE_LIMIT_ANONYMOUS_PER_MINUTE: '1000000' });
  const origin = stack.baseUrl.replace(/\/v1$/, '');
  const api = (method, p, body) =>
    fetch(`${stack.baseUrl}${p}`, { method, headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' }, body: JSON.stringify(body) }).then(
      async (r) => (r.status === 204 ? undefined : r.json()),
    );
  const form = (p, fields, headers = {}) =>
    fetch(`${origin}${p}`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body: new URLSearchParams(fields).toString(),
    });
  try {
    const user = (await api('POST', '/users', { email: 'bench.oauth@example.com', name: 'Bench' })).data;
    await api('PUT', `/users/${user.id}/password`, { password: PASSWORD });
    const app = (await api('POST', '/oauth/clients', { name: 'Bench app', type: 'confidential', redirectUris: [REDIRECT], scopes: ['openid', 'offline_access', 'read:users'], firstParty: true })).data;
    const rs = (await api('POST', '/oauth/clients', { name: 'Resource server', type: 'confidential', redirectUris: [], scopes: ['read:users'] })).data;
    const basic = (c) => `Basic ${Buffer.from(`${c.clientId}:${c.clientSecret}`).toString('base64')}`;
    const authorizeUrl = `${origin}/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: app.clientId, redirect_uri: REDIRECT, scope: 'openid offline_access read:users' })}`;

    // Log in once through the login form: the session cookie then gets a code per GET.
    const page = await fetch(authorizeUrl, { redirect: 'manual' });
    const csrfCookie = page.headers.getSetCookie().find((c) => c.startsWith('secsvc_oauth_csrf='))
      .split(';')[0];
    // The login form's fields (the first form; "Sign in with SSO" follows it).
    const hidden = Object.fromEntries([...(await page.text()).split('</form>')[0].matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((m) => [m[1], m[2].replace(/&amp;/g, '&')]));
    const loggedIn = await form('/oauth/authorize', { ...hidden, email: user.email, password: PASSWORD }, { cookie: csrfCookie });
    const session = loggedIn.headers.getSetCookie().find((c) => c.startsWith('secsvc_oauth_session=')).split(';')[0];
    const newCode = async () => {
      const r = await fetch(authorizeUrl, { redirect: 'manual', headers: { cookie: session } });
      return new URL(r.headers.get('location')).searchParams.get('code');
    };

    const rows = [];
    const exchange = [];
    const refresh = [];
    let accessToken;
    let refreshTokenForIntrospection;
    for (let round = 0; round < ROUNDS; round++) {
      // Codes live 60 s: each round makes its codes, then exchanges them at once (measured).
      const codes = [];
      const made = await pool(GRANTS, 20, async () => codes.push(await newCode()));
      const refreshTokens = [];
      const ex = await pool(GRANTS, connections, async (i) => {
        const r = await form('/oauth/token', { grant_type: 'authorization_code', code: codes[i], redirect_uri: REDIRECT }, { authorization: basic(app) });
        const body = await r.json();
        if (r.status !== 200) throw new Error(`exchange: ${r.status} ${JSON.stringify(body)}`);
        refreshTokens.push(body.refresh_token);
        accessToken = body.access_token;
      });
      const rf = await pool(GRANTS, connections, async (i) => {
        const r = await form('/oauth/token', { grant_type: 'refresh_token', refresh_token: refreshTokens[i] }, { authorization: basic(app) });
        const body = await r.json();
        if (r.status !== 200) throw new Error(`refresh: ${r.status} ${JSON.stringify(body)}`);
        refreshTokenForIntrospection = body.refresh_token;
      });
      exchange.push(ex);
      refresh.push(rf);
      rows.push(
        `| ${round + 1} | ${Math.round(made.perSecond)} | ${Math.round(ex.perSecond)} | ${ex.p50.toFixed(1)} | ${ex.p99.toFixed(1)} | ${Math.round(rf.perSecond)} | ${rf.p50.toFixed(1)} | ${rf.p99.toFixed(1)} |`,
      );
    }

    const introspect = (token) => ({
      url: `${origin}/oauth/introspect`,
      method: 'POST',
      headers: { authorization: basic(rs), 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token }).toString(),
    });
    await load({ connections, duration: 3, ...introspect(accessToken) }); // warm-up
    const cases = [
      ['GET /healthz (gateway ceiling)', { url: `${origin}/healthz` }],
      ['POST /oauth/introspect, access token (answered at the gateway)', introspect(accessToken)],
      ['POST /oauth/introspect, refresh token (asks identity)', introspect(refreshTokenForIntrospection)],
    ];
    const introRows = [];
    for (const [name, opts] of cases) {
      const r = await load({ connections, duration, ...opts });
      introRows.push(`| ${name} | ${Math.round(r.requests.average)} | ${r.latency.p50} | ${r.latency.p99} | ${r.non2xx} |`);
    }
    console.log(
      [
        `### ${machine()}`,
        '',
        `\`npm run bench:oauth\`: ${ROUNDS} rounds of ${GRANTS} codes (made by GET /oauth/authorize with a logged-in session, 20 in flight),`,
        `each exchanged (authorization_code, client_secret_basic) and its refresh token rotated once (refresh_token), ${connections} in flight;`,
        `introspection with autocannon, ${connections} connections, ${duration} s each.`,
        '',
        '| round | codes made/s | code exchanges/s | p50 ms | p99 ms | refreshes/s | p50 ms | p99 ms |',
        '|---:|---:|---:|---:|---:|---:|---:|---:|',
        ...rows,
        '',
        `Median: **${Math.round(median(exchange.map((x) => x.perSecond)))} code exchanges/s**, **${Math.round(median(refresh.map((x) => x.perSecond)))} refreshes/s**.`,
        '',
        '| case | req/s (mean) | p50 ms | p99 ms | non-2xx |',
        '|---|---:|---:|---:|---:|',
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
