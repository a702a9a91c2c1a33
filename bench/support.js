// Shared by the benchmarks: the whole local stack on free ports in a temporary data directory.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const autocannon = require('autocannon');
const { startLocalStack } = require('@secsvc/dev/stack');

const KEY = 'svc_sk_' + 'benchmarkKey'.repeat(4);
/**
 * The load of one benchmark (thousands of requests per second with one key or one user) is far above any
 * plan's limit: the rate limiter stays on and counts every request, but the bootstrap key (enterprise, no
 * custom limit) and users get 1,000,000 requests per minute so nothing is refused.
 */
const BENCH_LIMITS = { RATE_LIMIT_ENTERPRISE_PER_MINUTE: '1000000', RATE_LIMIT_USER_PER_MINUTE: '1000000' };

async function startBenchStack(env = {}, nodeArgs) {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'secsvc-bench-'));
  fs.chmodSync(tmp, 0o711);
  const stack = await startLocalStack({
    rootDir: path.resolve(__dirname, '..'),
    dataDir: path.join(tmp, 'data'),
    host: '127.0.0.1',
    port: 0,
    ports: { postgres: 0, identity: 0, policy: 0, audit: 0, admin: { gateway: 0, identity: 0, policy: 0, audit: 0, 'export-worker': 0 } },
    env: { LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn', BOOTSTRAP_API_KEY: KEY, ...BENCH_LIMITS, ...env },
    nodeArgs,
  });
  let stopped;
  const stop = () => {
    stopped ??= stack.stop().finally(() => {
      fs.rmSync(tmp, { recursive: true, force: true });
      process.off('SIGINT', interrupted).off('SIGTERM', interrupted);
    });
    return stopped;
  };
  // A benchmark stopped by Ctrl-C or SIGTERM stops what it started (PostgreSQL would outlive it otherwise).
  const interrupted = (signal) => void stop().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
  process.once('SIGINT', interrupted).once('SIGTERM', interrupted);
  return { stack, stop };
}

/** One autocannon run, resolved with its result. */
function load(opts) {
  return new Promise((resolve, reject) => autocannon(opts, (err, res) => (err ? reject(err) : resolve(res))));
}

const OAUTH_REDIRECT = 'https://app.example.com/callback';

/**
 * The OAuth fixture of the benchmarks on a started stack: a user with a password, a first-party confidential
 * app (code flow, refresh tokens), a confidential resource server (introspection, client_credentials), the
 * user logged in once through the login form, and `newCode()`: one authorization code per GET
 * /oauth/authorize with that session.
 */
async function productOAuth(stack) {
  const password = 'correct horse battery staple';
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
  const user = (await api('POST', '/users', { email: 'bench.oauth@example.com', name: 'Bench' })).data;
  await api('PUT', `/users/${user.id}/password`, { password });
  const app = (await api('POST', '/oauth/clients', { name: 'Bench app', type: 'confidential', redirectUris: [OAUTH_REDIRECT], scopes: ['openid', 'offline_access', 'read:users'], firstParty: true })).data;
  const rs = (await api('POST', '/oauth/clients', { name: 'Resource server', type: 'confidential', redirectUris: [], scopes: ['read:users'] })).data;
  const basic = (c) => `Basic ${Buffer.from(`${c.clientId}:${c.clientSecret}`).toString('base64')}`;
  const authorizeUrl = `${origin}/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: app.clientId, redirect_uri: OAUTH_REDIRECT, scope: 'openid offline_access read:users' })}`;

  // Log in once through the login form: the session cookie then gets a code per GET.
  const page = await fetch(authorizeUrl, { redirect: 'manual' });
  const csrfCookie = page.headers.getSetCookie().find((c) => c.startsWith('secsvc_oauth_csrf=')).split(';')[0];
  // The login form's fields (the first form; "Sign in with SSO" follows it).
  const hidden = Object.fromEntries([...(await page.text()).split('</form>')[0].matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((m) => [m[1], m[2].replace(/&amp;/g, '&')]));
  const loggedIn = await form('/oauth/authorize', { ...hidden, email: user.email, password }, { cookie: csrfCookie });
  const session = loggedIn.headers.getSetCookie().find((c) => c.startsWith('secsvc_oauth_session=')).split(';')[0];
  const newCode = async () => {
    const r = await fetch(authorizeUrl, { redirect: 'manual', headers: { cookie: session } });
    return new URL(r.headers.get('location')).searchParams.get('code');
  };
  return { origin, api, form, user, app, rs, basic, newCode };
}

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

const CLOCK_TICKS_PER_SECOND = 100; // USER_HZ: 100 on every Linux architecture Node runs on

/** Every process's parent and CPU ticks (utime + stime + cutime + cstime), from /proc. */
function processTable() {
  const table = new Map();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat;
    try {
      stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // ended meanwhile
    }
    // Fields after the command name (which may hold spaces and parentheses): state ppid ... utime(14) stime cutime cstime.
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    table.set(Number(entry), { ppid: Number(f[1]), ticks: Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]) });
  }
  return table;
}

/**
 * CPU milliseconds used so far by each named process and all its live descendants (PostgreSQL's backends, a
 * gateway's workers): ended children are in their parent's cutime/cstime once reaped, so a difference of two
 * readings counts the work of processes that ended in between. `pids`: name -> pid (undefined ones skipped).
 */
function cpuMs(pids) {
  const table = processTable();
  const children = new Map();
  for (const [pid, p] of table) children.set(p.ppid, [...(children.get(p.ppid) ?? []), pid]);
  const tree = (pid) => (table.get(pid)?.ticks ?? 0) + (children.get(pid) ?? []).reduce((sum, c) => sum + tree(c), 0);
  const out = {};
  for (const [name, pid] of Object.entries(pids)) if (pid) out[name] = (tree(pid) * 1000) / CLOCK_TICKS_PER_SECOND;
  return out;
}

/** Resolves once the named processes are idle (under 10 % of a core for 300 ms) or after `maxMs`. */
async function settle(pids, maxMs = 10_000) {
  const deadline = Date.now() + maxMs;
  let last = cpuMs(pids);
  while (Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 300));
    const now = cpuMs(pids);
    const used = Object.keys(now).reduce((sum, k) => sum + now[k] - (last[k] ?? 0), 0);
    if (used <= 30) return;
    last = now;
  }
}

function machine() {
  return `${new Date().toISOString().slice(0, 10)}: ${os.cpus().length} × ${os.cpus()[0].model}, Node ${process.version}`;
}

module.exports = { KEY, BENCH_LIMITS, startBenchStack, load, pool, median, OAUTH_REDIRECT, productOAuth, cpuMs, processTable, settle, machine };
