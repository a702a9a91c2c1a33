// Ory Hydra for bench/peers: installed once (install-hydra.sh), migrated into its own database of the
// product's PostgreSQL server, served with a generated configuration, and the minimal login and consent
// app a code flow needs (it accepts every login and every consent through Hydra's admin API).
const { execFileSync, spawn } = require('node:child_process');
const { randomBytes } = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { ensureDatabase } = require('@secsvc/dev/stack');

const BIN = path.join(process.env.SECSVC_TOOLS_DIR ?? path.join(os.homedir(), '.cache/secsvc/bin'), 'hydra');

function installHydra() {
  execFileSync('bash', [path.join(__dirname, 'install-hydra.sh')], { stdio: ['ignore', 'ignore', 'inherit'] });
  return BIN;
}

const freePort = () =>
  new Promise((resolve, reject) => {
    const srv = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });

/** The minimal login and consent app: every challenge accepted through the admin API, then redirected on. */
function startLoginConsentApp() {
  let admin;
  const accept = async (kind, challenge) => {
    const q = `${kind}_challenge=${encodeURIComponent(challenge)}`;
    let body = { subject: 'bench-user', remember: false };
    if (kind === 'consent') {
      const req = await fetch(`${admin}/admin/oauth2/auth/requests/consent?${q}`).then((r) => r.json());
      body = { grant_scope: req.requested_scope, grant_access_token_audience: req.requested_access_token_audience, remember: false };
    }
    const r = await fetch(`${admin}/admin/oauth2/auth/requests/${kind}/accept?${q}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (r.status !== 200) throw new Error(`hydra ${kind} accept: ${r.status} ${await r.text()}`);
    return (await r.json()).redirect_to;
  };
  const server = http.createServer((req, res) => {
    const u = new URL(req.url, 'http://x');
    const kind = u.pathname.slice(1);
    const challenge = u.searchParams.get(`${kind}_challenge`);
    if (!['login', 'consent'].includes(kind) || !challenge) return res.writeHead(404).end();
    accept(kind, challenge).then(
      (to) => res.writeHead(302, { location: to }).end(),
      (err) => res.writeHead(502, { 'content-type': 'text/plain' }).end(err.message),
    );
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        url: `http://127.0.0.1:${server.address().port}`,
        setAdmin: (a) => (admin = a),
        close: () => new Promise((r) => server.close(r)),
      }),
    ),
  );
}

/**
 * Hydra migrated into `database` of the server of `databaseUrl` and serving (`serve all --dev`, public and
 * admin on 127.0.0.1) with its own login and consent app. `iterations`: pbkdf2's (undefined: Hydra's default);
 * `accessTokens`: jwt or opaque; `maxConns`: its pool (undefined: Hydra's default); `signingAlg`: a new key of
 * that algorithm in the access and ID token key sets (undefined: the RS256 keys Hydra generates);
 * `accessTokenTtl`: its `ttl.access_token` (a duration such as `1m`; undefined: Hydra's hour).
 */
async function startHydra({ databaseUrl, database = 'hydra', iterations, accessTokens = 'jwt', maxConns, signingAlg, accessTokenTtl }) {
  const loginApp = await startLoginConsentApp();
  const dsn = `${await ensureDatabase(databaseUrl, database)}?sslmode=disable${maxConns ? `&max_conns=${maxConns}&max_idle_conns=${maxConns}` : ''}`;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'secsvc-hydra-'));
  const [pub, adm] = [await freePort(), await freePort()];
  const config = {
    serve: { public: { host: '127.0.0.1', port: pub }, admin: { host: '127.0.0.1', port: adm } },
    urls: { self: { issuer: `http://127.0.0.1:${pub}` }, login: `${loginApp.url}/login`, consent: `${loginApp.url}/consent` },
    secrets: { system: [randomBytes(32).toString('hex')] },
    strategies: { access_token: accessTokens },
    log: { level: 'error' },
    ...(accessTokenTtl ? { ttl: { access_token: accessTokenTtl } } : {}),
    ...(iterations ? { oauth2: { hashers: { algorithm: 'pbkdf2', pbkdf2: { iterations } } } } : {}),
  };
  // JSON is YAML; the file holds the system secret: readable by this user only. The DSN goes by environment.
  const file = path.join(dir, 'hydra.yml');
  fs.writeFileSync(file, JSON.stringify(config), { mode: 0o600 });
  const env = { ...process.env, DSN: dsn, SQA_OPT_OUT: 'true' };
  execFileSync(BIN, ['migrate', 'sql', 'up', '-e', '--yes', '--config', file], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  const recent = [];
  const child = spawn(BIN, ['serve', 'all', '--dev', '--sqa-opt-out', '--config', file], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  for (const s of [child.stdout, child.stderr])
    s.on('data', (d) => {
      recent.push(...d.toString().split('\n').filter(Boolean));
      recent.splice(0, Math.max(0, recent.length - 20));
    });
  let exited = false;
  const exit = new Promise((r) => child.once('exit', () => ((exited = true), r())));
  const admin = `http://127.0.0.1:${adm}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (exited) throw new Error(`hydra exited during start-up:\n${recent.join('\n')}`);
    if (await fetch(`${admin}/health/ready`).then((r) => r.ok, () => false)) break;
    if (Date.now() > deadline) throw new Error(`hydra not ready in time:\n${recent.join('\n')}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  loginApp.setAdmin(admin);
  // Signing keys: Hydra generates RS256 (RSA 4096) sets on start; a new key in a set is the one it signs with.
  if (signingAlg)
    for (const set of ['hydra.jwt.access-token', 'hydra.openid.id-token']) {
      const r = await fetch(`${admin}/admin/keys/${set}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ alg: signingAlg, use: 'sig' }) });
      if (r.status !== 201) throw new Error(`hydra key ${set}: ${r.status} ${await r.text()}`);
    }
  return {
    pid: child.pid,
    public: `http://127.0.0.1:${pub}`,
    admin,
    async stop() {
      if (!exited) child.kill('SIGTERM');
      await exit;
      await loginApp.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * The benchmark's clients on a Hydra: an app for the code flow with refresh tokens and a resource server for
 * client_credentials, both client_secret_basic; `newCode()` runs the whole browser flow (authorize, login,
 * consent, authorize) through the login and consent app and returns the code.
 */
async function hydraOAuth(hydra, redirectUri) {
  const createClient = async (fields) => {
    const secret = randomBytes(24).toString('hex');
    const r = await fetch(`${hydra.admin}/admin/clients`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_secret: secret, token_endpoint_auth_method: 'client_secret_basic', ...fields }),
    });
    if (r.status !== 201) throw new Error(`hydra client: ${r.status} ${await r.text()}`);
    return { clientId: (await r.json()).client_id, clientSecret: secret };
  };
  const app = await createClient({
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    scope: 'openid offline_access read:users',
    redirect_uris: [redirectUri],
  });
  const rs = await createClient({ grant_types: ['client_credentials'], response_types: [], scope: 'read:users' });
  // RFC 6749 2.3.1: id and secret form-encoded before base64 (both are URL-safe here).
  const basic = (c) => `Basic ${Buffer.from(`${c.clientId}:${c.clientSecret}`).toString('base64')}`;
  const newCode = async () => {
    const jar = new Map();
    let url = `${hydra.public}/oauth2/auth?${new URLSearchParams({
      response_type: 'code',
      client_id: app.clientId,
      redirect_uri: redirectUri,
      scope: 'openid offline_access read:users',
      state: randomBytes(12).toString('hex'),
    })}`;
    for (let hop = 0; hop < 10; hop++) {
      if (url.startsWith(redirectUri)) {
        const code = new URL(url).searchParams.get('code');
        if (!code) throw new Error(`hydra: no code in ${url}`);
        return code;
      }
      const cookie = [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
      const r = await fetch(url, { redirect: 'manual', headers: cookie ? { cookie } : {} });
      for (const c of r.headers.getSetCookie()) {
        const [pair] = c.split(';');
        const eq = pair.indexOf('=');
        jar.set(pair.slice(0, eq), pair.slice(eq + 1));
      }
      const location = r.headers.get('location');
      if (!location) throw new Error(`hydra code flow: ${r.status} ${await r.text()}`);
      await r.arrayBuffer();
      url = new URL(location, url).toString();
    }
    throw new Error('hydra code flow: too many redirects');
  };
  return { app, rs, basic, newCode };
}

module.exports = { installHydra, startHydra, hydraOAuth };
