import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../stack/ports';

// A real Keycloak (the Quarkus distribution, dev mode, in-memory H2 database) for interop tests: the SAML
// identity provider of a product SSO connection, and an OpenID Connect relying party of the product's
// authorization server (identity brokering). Configured through its admin REST API with fetch (kcadm.sh
// starts a JVM per call).

/** The Keycloak version scripts/install-tools.sh installs (keep KEYCLOAK_VERSION there in step). */
export const KEYCLOAK_VERSION = '26.5.6';
/** Keycloak 26 runs on Java 21 or later. */
export const KEYCLOAK_MIN_JAVA = 21;

/**
 * The unpacked distribution: $KEYCLOAK_HOME, else keycloak-<version> in $SECSVC_KEYCLOAK_DIR or
 * ~/.cache/secsvc/keycloak (where scripts/install-tools.sh unpacks it).
 */
export function keycloakHome(): string {
  if (process.env.KEYCLOAK_HOME) return process.env.KEYCLOAK_HOME;
  const dir = process.env.SECSVC_KEYCLOAK_DIR || path.join(os.homedir(), '.cache', 'secsvc', 'keycloak');
  return path.join(dir, `keycloak-${KEYCLOAK_VERSION}`);
}

/** The major version of the JDK at `home` (its bin/java), or undefined when there is none. */
function javaMajor(home: string): number | undefined {
  const java = path.join(home, 'bin', 'java');
  if (!existsSync(java)) return undefined;
  // `java -version` writes to stderr: `openjdk version "25.0.3" ...` ("1.8.0_..." for Java 8).
  const out = spawnSync(java, ['-version'], { encoding: 'utf8', timeout: 10_000 });
  const m = /version "(\d+)(?:\.(\d+))?/.exec(`${out.stderr ?? ''}${out.stdout ?? ''}`);
  if (!m) return undefined;
  return m[1] === '1' ? Number(m[2]) : Number(m[1]);
}

/**
 * A JDK for Keycloak (Java 21 or later): $JAVA_HOME when it is one, else the newest under /usr/lib/jvm (the
 * machines ship Temurin 25 beside Java 17). Undefined when there is none.
 */
export function findKeycloakJava(): string | undefined {
  if (foundJava === undefined) foundJava = { home: searchKeycloakJava() };
  return foundJava.home;
}

let foundJava: { home: string | undefined } | undefined;

function searchKeycloakJava(): string | undefined {
  const jvm = '/usr/lib/jvm';
  const candidates = [...(process.env.JAVA_HOME ? [process.env.JAVA_HOME] : []), ...(existsSync(jvm) ? readdirSync(jvm).map((d) => path.join(jvm, d)) : [])];
  const versions = new Map(candidates.map((home) => [home, javaMajor(home) ?? 0]));
  const newest = [...candidates.slice(process.env.JAVA_HOME ? 1 : 0)].sort((a, b) => versions.get(b)! - versions.get(a)!);
  return [...(process.env.JAVA_HOME ? [process.env.JAVA_HOME] : []), ...newest].find((home) => versions.get(home)! >= KEYCLOAK_MIN_JAVA);
}

/**
 * Why Keycloak cannot be started here (no distribution, no Java 21+), or undefined when it can. Under CI=true
 * a missing piece throws instead: CI installs both (scripts/install-tools.sh), so nothing may skip.
 */
export function keycloakSkipReason(): string | undefined {
  const home = keycloakHome();
  let reason: string | undefined;
  if (!existsSync(path.join(home, 'bin', 'kc.sh'))) reason = `Keycloak ${KEYCLOAK_VERSION} not found at ${home} (bash scripts/install-tools.sh, or set KEYCLOAK_HOME)`;
  else if (!findKeycloakJava()) reason = `no JDK ${KEYCLOAK_MIN_JAVA}+ for Keycloak (JAVA_HOME or under /usr/lib/jvm)`;
  if (reason && process.env.CI === 'true') throw new Error(`${reason}: CI installs it, so the Keycloak interop tests may not skip`);
  return reason;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- Keycloak's representations are large; tests read the fields they need
export type KeycloakJson = any;

export interface TestKeycloak {
  /** http://127.0.0.1:<port>: the admin API and other back-channel calls. */
  url: string;
  /** http://<publicHost>:<port>: what browsers open (issuer, login pages, SAML endpoints). */
  publicUrl: string;
  port: number;
  adminUser: string;
  adminPassword: string;
  /** The last lines Keycloak printed (for failure messages). */
  logTail: () => string;
  /**
   * An admin REST call (`/admin/realms/...`, relative to `url`) with a fresh-enough admin token; throws on a
   * status outside 2xx unless `expect` names it. JSON bodies are sent as JSON, strings as given (`contentType`).
   */
  admin: (method: string, apiPath: string, body?: unknown, o?: { contentType?: string; expect?: number[] }) => Promise<{ status: number; headers: Headers; body: KeycloakJson }>;
  /** A realm (enabled, registration off, defaults otherwise). */
  createRealm: (realm: string, settings?: Record<string, unknown>) => Promise<void>;
  /** A user with a password: email verified, no required actions. Returns its id. */
  createUser: (realm: string, user: { username: string; email: string; password: string; firstName?: string; lastName?: string }) => Promise<string>;
  /**
   * A SAML client made from SP metadata the way the admin console's "Import client" does: the metadata through
   * the client-description converter, the representation it returns created as is. Returns the client as stored.
   */
  importSamlClient: (realm: string, spMetadataXml: string) => Promise<KeycloakJson>;
  /** A client as stored, by its clientId (for SAML: the SP entity id). */
  getClient: (realm: string, clientId: string) => Promise<KeycloakJson>;
  /** Merges `attributes` into a client's attributes (and any top-level `fields`), then returns the client as stored. */
  updateClient: (realm: string, clientId: string, attributes: Record<string, string>, fields?: Record<string, unknown>) => Promise<KeycloakJson>;
  /** The realm's SAML IdP metadata (EntityDescriptor). */
  samlDescriptor: (realm: string) => Promise<string>;
  /**
   * An OpenID Connect identity provider (brokering) configured from a discovery document, as the admin console's
   * "Discovery endpoint" field does (the import-config endpoint), with `config` over it.
   */
  createOidcIdentityProvider: (
    realm: string,
    o: { alias: string; discoveryUrl: string; clientId: string; clientSecret?: string; clientAuthMethod?: string; config?: Record<string, string>; fields?: Record<string, unknown> },
  ) => Promise<KeycloakJson>;
  /** Users of a realm matching `search` (email, username, name). */
  findUsers: (realm: string, search: Record<string, string>) => Promise<KeycloakJson[]>;
  /** Stops Keycloak (SIGTERM to its process group, SIGKILL to it after 15 s), waits for it, deletes its temp dir. */
  stop: () => Promise<void>;
}

export interface StartKeycloakOptions {
  home?: string;
  javaHome?: string;
  /**
   * The host name browsers reach Keycloak by (default 127.0.0.1; it always listens on 127.0.0.1 only). Another
   * name for the loopback, such as `localhost`, makes Keycloak another site than a server on 127.0.0.1, as an
   * IdP is in real life (cross-site form posts, no Lax cookies on them). Front-channel URLs (issuer, SAML
   * descriptor, login pages) use it; the admin API answers on 127.0.0.1 all the same.
   */
  publicHost?: string;
  /** How long start-up may take (default 180 s: a cold start is ~25 s on 2 idle cores). */
  startTimeoutMs?: number;
  /** Each line Keycloak prints. */
  onOutput?: (line: string) => void;
}

/**
 * Keycloak in dev mode (`kc.sh start-dev`, in-memory database: fresh on every start) on a free 127.0.0.1 port,
 * in its own process group (kc.sh and its JVM; stop ends the group), with a bootstrap admin. Resolves once
 * `/realms/master` answers.
 */
export async function startKeycloak(options: StartKeycloakOptions = {}): Promise<TestKeycloak> {
  const home = options.home ?? keycloakHome();
  if (!existsSync(path.join(home, 'bin', 'kc.sh'))) throw new Error(`Keycloak not found at ${home} (bash scripts/install-tools.sh, or set KEYCLOAK_HOME)`);
  const javaHome = options.javaHome ?? findKeycloakJava();
  if (!javaHome) throw new Error(`no JDK ${KEYCLOAK_MIN_JAVA}+ for Keycloak (set JAVA_HOME)`);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const publicUrl = `http://${options.publicHost ?? '127.0.0.1'}:${port}`;
  const adminUser = 'admin';
  const adminPassword = randomBytes(18).toString('base64url');
  // Keycloak's temporary files (its dev-mode data dir is under the distribution; dev-mem keeps no database there).
  const tmp = await mkdtemp(path.join(os.tmpdir(), 'secsvc-keycloak-'));
  const tail: string[] = [];
  const child: ChildProcess = spawn(
    path.join(home, 'bin', 'kc.sh'),
    // The front-channel URLs name publicUrl whatever the request's Host; back-channel ones follow the request.
    ['start-dev', '--http-port', String(port), '--http-host', '127.0.0.1', '--db', 'dev-mem', '--hostname', publicUrl, '--hostname-backchannel-dynamic', 'true', '--log-console-color', 'false'],
    {
      detached: true,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        JAVA_HOME: javaHome,
        TMPDIR: tmp,
        JAVA_OPTS_APPEND: `-Djava.io.tmpdir=${tmp}`,
        KC_BOOTSTRAP_ADMIN_USERNAME: adminUser,
        KC_BOOTSTRAP_ADMIN_PASSWORD: adminPassword,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  for (const stream of [child.stdout!, child.stderr!]) {
    let partial = '';
    stream.on('data', (chunk: Buffer) => {
      const lines = (partial + chunk.toString()).split('\n');
      partial = lines.pop()!;
      for (const line of lines) {
        options.onOutput?.(line);
        tail.push(line);
        if (tail.length > 40) tail.shift();
      }
    });
  }
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const running = () => child.exitCode === null && child.signalCode === null;
  const signalGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, signal);
    } catch {
      // the group is gone already
    }
  };
  const stop = async () => {
    if (running()) {
      signalGroup('SIGTERM');
      const timer = setTimeout(() => signalGroup('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    }
    // kc.sh forwards SIGTERM to the JVM and exits only after it: the group is empty now.
    await rm(tmp, { recursive: true, force: true });
  };
  const deadline = Date.now() + (options.startTimeoutMs ?? 180_000);
  for (;;) {
    if (!running()) {
      await stop();
      throw new Error(`Keycloak exited during start-up (${child.signalCode ?? `code ${child.exitCode}`}):\n${tail.join('\n')}`);
    }
    const ok = await fetch(`${url}/realms/master`, { signal: AbortSignal.timeout(2_000) }).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`Keycloak did not answer on ${url} in time:\n${tail.join('\n')}`);
    }
    await new Promise((r) => setTimeout(r, 500));
  }

  // The admin token (admin-cli, password grant), renewed a little before it expires (60 s by default).
  let token: { value: string; until: number } | undefined;
  const adminToken = async () => {
    if (token && token.until > Date.now()) return token.value;
    const res = await fetch(`${url}/realms/master/protocol/openid-connect/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'password', client_id: 'admin-cli', username: adminUser, password: adminPassword }),
    });
    const body = (await res.json()) as { access_token?: string; expires_in?: number };
    if (!res.ok || !body.access_token) throw new Error(`Keycloak admin token: ${res.status} ${JSON.stringify(body)}`);
    token = { value: body.access_token, until: Date.now() + Math.max(5, (body.expires_in ?? 60) - 15) * 1000 };
    return token.value;
  };

  const admin: TestKeycloak['admin'] = async (method, apiPath, body, o = {}) => {
    const res = await fetch(`${url}${apiPath}`, {
      method,
      headers: {
        authorization: `Bearer ${await adminToken()}`,
        accept: 'application/json',
        ...(body === undefined ? {} : { 'content-type': o.contentType ?? 'application/json' }),
      },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: KeycloakJson = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      // not JSON: the text
    }
    if (!res.ok && !(o.expect ?? []).includes(res.status)) throw new Error(`Keycloak ${method} ${apiPath}: ${res.status} ${text.slice(0, 500)}`);
    return { status: res.status, headers: res.headers, body: parsed };
  };

  const enc = encodeURIComponent;
  const getClient = async (realm: string, clientId: string) => {
    const found = (await admin('GET', `/admin/realms/${enc(realm)}/clients?clientId=${enc(clientId)}`)).body as KeycloakJson[];
    if (!found[0]) throw new Error(`Keycloak realm ${realm} has no client ${clientId}`);
    return found[0];
  };

  return {
    url,
    publicUrl,
    port,
    adminUser,
    adminPassword,
    logTail: () => tail.join('\n'),
    admin,
    createRealm: async (realm, settings = {}) => {
      await admin('POST', '/admin/realms', { realm, enabled: true, registrationAllowed: false, ...settings });
    },
    createUser: async (realm, u) => {
      const res = await admin('POST', `/admin/realms/${enc(realm)}/users`, {
        username: u.username,
        email: u.email,
        firstName: u.firstName ?? 'Test',
        lastName: u.lastName ?? 'User',
        enabled: true,
        emailVerified: true,
        requiredActions: [],
        credentials: [{ type: 'password', value: u.password, temporary: false }],
      });
      return res.headers.get('location')!.split('/').at(-1)!;
    },
    importSamlClient: async (realm, xml) => {
      const converted = await admin('POST', `/admin/realms/${enc(realm)}/client-description-converter`, xml, { contentType: 'application/xml' });
      await admin('POST', `/admin/realms/${enc(realm)}/clients`, converted.body);
      return getClient(realm, converted.body.clientId);
    },
    getClient,
    updateClient: async (realm, clientId, attributes, fields = {}) => {
      const client = await getClient(realm, clientId);
      await admin('PUT', `/admin/realms/${enc(realm)}/clients/${client.id}`, { ...client, ...fields, attributes: { ...client.attributes, ...attributes } });
      return getClient(realm, clientId);
    },
    samlDescriptor: async (realm) => {
      const res = await fetch(`${url}/realms/${enc(realm)}/protocol/saml/descriptor`);
      if (!res.ok) throw new Error(`Keycloak SAML descriptor of ${realm}: ${res.status}`);
      return res.text();
    },
    createOidcIdentityProvider: async (realm, o) => {
      const imported = await admin('POST', `/admin/realms/${enc(realm)}/identity-provider/import-config`, { providerId: 'oidc', fromUrl: o.discoveryUrl });
      const config: Record<string, string> = {
        ...(imported.body as Record<string, string>),
        clientId: o.clientId,
        ...(o.clientSecret !== undefined && { clientSecret: o.clientSecret }),
        clientAuthMethod: o.clientAuthMethod ?? 'client_secret_post',
        ...o.config,
      };
      await admin('POST', `/admin/realms/${enc(realm)}/identity-provider/instances`, { alias: o.alias, providerId: 'oidc', enabled: true, ...o.fields, config });
      return (await admin('GET', `/admin/realms/${enc(realm)}/identity-provider/instances/${enc(o.alias)}`)).body;
    },
    findUsers: async (realm, search) => (await admin('GET', `/admin/realms/${enc(realm)}/users?${new URLSearchParams({ ...search, briefRepresentation: 'false' })}`)).body,
    stop,
  };
}
