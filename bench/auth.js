#!/usr/bin/env node
// bench/auth: GET /v1/users/{id} authenticated by an API key, a session token and a JWT access token, against
// unauthenticated GET /healthz, in one run over the full local stack; then POST /v1/sessions/verify.
// autocannon, 50 connections, BENCH_DURATION seconds each (default 15). Run after `npm run build`:
//   npm run bench:auth
const { KEY, load, machine, startBenchStack } = require('./support');

const duration = Number(process.env.BENCH_DURATION ?? 15);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
const run = (opts) => load({ connections, duration, ...opts });

async function main() {
  const { stack, stop } = await startBenchStack();
  const json = (method, p, body, bearer = KEY) =>
    fetch(`${stack.baseUrl}${p}`, {
      method,
      headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }).then((r) => r.json());
  try {
    const user = (await json('POST', '/users', { email: 'bench.auth@example.com', name: 'Bench' })).data;
    const session = (await json('POST', '/sessions', { userId: user.id, expiresIn: '1h' })).data;
    const jwt = (await json('POST', '/tokens', { sessionToken: session.token })).data.accessToken;
    const origin = stack.baseUrl.replace(/\/v1$/, '');
    const userUrl = `${stack.baseUrl}/users/${user.id}`;
    await run({ url: userUrl, duration: 3, headers: { authorization: `Bearer ${KEY}` } }); // warm-up
    const cases = [
      ['GET /healthz (no auth)', { url: `${origin}/healthz` }],
      ['GET /v1/users/{id}, API key', { url: userUrl, headers: { authorization: `Bearer ${KEY}` } }],
      ['GET /v1/users/{id}, session token', { url: userUrl, headers: { authorization: `Bearer ${session.token}` } }],
      ['GET /v1/users/{id}, JWT', { url: userUrl, headers: { authorization: `Bearer ${jwt}` } }],
      [
        'POST /v1/sessions/verify',
        {
          url: `${stack.baseUrl}/sessions/verify`,
          method: 'POST',
          headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
          body: JSON.stringify({ token: session.token }),
        },
      ],
    ];
    const rows = [];
    for (const [name, opts] of cases) {
      const r = await run(opts);
      rows.push(`| ${name} | ${Math.round(r.requests.average)} | ${r.latency.p50} | ${r.latency.p99} | ${r.non2xx} |`);
    }
    console.log(
      [
        `### ${machine()}`,
        '',
        `\`npm run bench:auth\` (autocannon, ${connections} connections, ${duration} s each)`,
        '',
        '| case | req/s (mean) | p50 ms | p99 ms | non-2xx |',
        '|---|---:|---:|---:|---:|',
        ...rows,
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
