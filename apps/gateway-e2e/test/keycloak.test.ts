/**
 * Interop with a real Keycloak (26.5.6, dev mode, in-memory database; scripts/install-tools.sh installs it),
 * driven by Debian's chromium through playwright-core:
 *  - Keycloak as the SAML IdP of product SSO connections: the realm's descriptor is the connection's IdP
 *    metadata; the connection's SP metadata is imported into the realm as the admin console's "Import client"
 *    does. SP-initiated login (from the OAuth login page and from the connection's login URL), IdP-initiated
 *    login, single logout both ways, and Keycloak's encryption and signature settings one by one.
 *  - Keycloak as an OpenID Connect relying party of the product's authorization server (identity brokering):
 *    discovery, PKCE S256, the ES256 ID token, userinfo.
 * Keycloak answers on `localhost` and the product on 127.0.0.1: two sites, so Keycloak's form posts to the ACS
 * and the SLO endpoint are cross-site as in real life. One Keycloak and one stack for the whole file. Without
 * chromium or Keycloak (or a JDK 21+) the suite is skipped with a note; under CI=true that is a failure.
 */
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { KEYCLOAK_VERSION, keycloakSkipReason, startKeycloak, type KeycloakJson, type TestKeycloak } from '@secsvc/dev/testing';
import { browserSuite, launchChromium } from './chromium';
import { authorizationRequest, exchangeCode, PASSWORD, registerClient, startOAuthStack, userWithPassword, type Json, type OAuthStack } from './oauth-support';
import { eventually } from './support';

jest.setTimeout(240_000);

const KEY = 'svc_sk_' + 'keycloakInterop1'.repeat(3);
const TITLE = 'Keycloak 26 as SAML IdP and OpenID Connect relying party';
const suite = browserSuite(TITLE, [keycloakSkipReason()]);

/** Keycloak's client attributes for assertion encryption (SamlConfigAttributes; absent: Keycloak's defaults). */
const ENC = {
  on: 'saml.encrypt',
  /** The data (block) encryption algorithm. */
  algorithm: 'saml.encryption.algorithm',
  /** Key transport: xmlenc11#rsa-oaep (the default), xmlenc#rsa-oaep-mgf1p or xmlenc#rsa-1_5. */
  keyAlgorithm: 'saml.encryption.keyAlgorithm',
  /** The OAEP digest (default SHA-256); only used when keyAlgorithm is set. */
  digestMethod: 'saml.encryption.digestMethod',
  /** The OAEP mask generation function (default MGF1-SHA-256); only used when keyAlgorithm is xmlenc11#rsa-oaep. */
  maskGenerationFunction: 'saml.encryption.maskGenerationFunction',
} as const;
const XMLENC = 'http://www.w3.org/2001/04/xmlenc#';
const XMLENC11 = 'http://www.w3.org/2009/xmlenc11#';
const SHA1 = 'http://www.w3.org/2000/09/xmldsig#sha1';
const RSA_SHA256 = 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256';
/** The logout tests and the IdP-initiated login leave encryption to its own cases: their failures name their flow. */
const NO_ENCRYPTION = { [ENC.on]: 'false' };

let kc: TestKeycloak;
let s: OAuthStack;
let browser: Browser;
let appServer: Server;
let appBase: string;
/** Where the app's /start sends the browser (its own authorization request), once a test sets it. */
let appAuthorization: string | undefined;
const contexts: BrowserContext[] = [];

interface Connection {
  id: string;
  allowIdpInitiated: boolean;
  sp: { entityId: string; metadataUrl: string; acsUrl: string; loginUrl: string; sloUrl: string };
}

interface SamlSetup {
  realm: string;
  email: string;
  userId: string;
  connection: Connection;
  /** The Keycloak client as stored after the import (and any changes). */
  client: KeycloakJson;
}

/**
 * A fresh Keycloak realm with one user (`ada@<realm>.example.com`), a product SSO connection for that domain
 * whose IdP metadata is the realm's descriptor, and the connection's SP metadata imported into the realm with
 * Keycloak's defaults; then `attributes` over the imported client's.
 */
async function samlSetup(realm: string, o: { attributes?: Record<string, string>; allowIdpInitiated?: boolean; connection?: Record<string, unknown> } = {}): Promise<SamlSetup> {
  const email = `ada@${realm}.example.com`;
  await kc.createRealm(realm);
  const userId = await kc.createUser(realm, { username: 'ada', email, password: PASSWORD, firstName: 'Ada', lastName: 'Lovelace' });
  const created = await s.api('POST', '/sso/connections', {
    name: `Keycloak ${realm}`,
    idpMetadataXml: await kc.samlDescriptor(realm),
    domains: [`${realm}.example.com`],
    defaultRoles: ['role_staff'],
    ...(o.allowIdpInitiated !== undefined && { allowIdpInitiated: o.allowIdpInitiated }),
    ...o.connection,
  });
  if (created.status !== 201) throw new Error(`connection: ${created.status} ${JSON.stringify(created.body)}`);
  const connection = created.body.data as Connection;
  const metadata = await fetch(connection.sp.metadataUrl);
  expect(metadata.status).toBe(200);
  let client = await kc.importSamlClient(realm, await metadata.text());
  if (o.attributes) client = await kc.updateClient(realm, client.clientId, o.attributes);
  return { realm, email, userId, connection, client };
}

/** A fresh browser context (cookies of its own), JavaScript on (Keycloak's POST binding pages submit by script). */
async function newPage(): Promise<{ page: Page; errors: string[] }> {
  const context = await browser.newContext();
  context.setDefaultTimeout(20_000);
  contexts.push(context);
  const page = await context.newPage();
  // Every error the product answers the browser with (the ACS's and the SLO endpoint's 401s), for the message
  // when a flow does not arrive.
  const errors: string[] = [];
  page.on('response', (r) => {
    if (r.url().startsWith(s.issuer) && r.status() >= 400) {
      r.text().then(
        (t) => errors.push(`${r.request().method()} ${r.url().split('?')[0]} -> ${r.status()} ${t.slice(0, 400)}`),
        () => errors.push(`${r.request().method()} ${r.url().split('?')[0]} -> ${r.status()}`),
      );
    }
  });
  return { page, errors };
}

/** Waits until the page is at `url`; else fails naming where it is, what it shows and the product's errors. */
async function arrive(page: Page, errors: string[], url: string | RegExp | ((u: URL) => boolean), timeout = 20_000): Promise<void> {
  try {
    await page.waitForURL(url, { timeout });
  } catch {
    const text = ((await page.locator('body').textContent().catch(() => '')) ?? '').replace(/\s+/g, ' ').trim();
    const where = typeof url === 'function' ? 'the expected page' : String(url);
    throw new Error(`the browser did not reach ${where}: it is at ${page.url()} showing "${text.slice(0, 400)}"; the product answered: ${errors.join(' | ') || 'no error'}`);
  }
}

/** Keycloak's login form (username or email, password). */
async function keycloakSignIn(page: Page, username: string): Promise<void> {
  await page.waitForSelector('#username');
  expect(page.url().startsWith(kc.publicUrl)).toBe(true);
  await page.fill('#username', username);
  await page.fill('#password', PASSWORD);
  await page.click('#kc-login');
}

/** The JSON the product's page shows (the ACS's or the continuation's answer). */
async function pageJson(page: Page): Promise<Json> {
  return JSON.parse((await page.locator('body').textContent()) ?? '');
}

/** What Keycloak posted to the ACS, as far as it can be read without keys. */
interface Posted {
  encrypted: boolean;
  /** EncryptedData's algorithm (the block cipher). */
  dataAlgorithm?: string;
  /** EncryptedKey's: key transport, its OAEP digest and mask generation function. */
  keyAlgorithm?: string;
  digest?: string;
  mgf?: string;
  /** A signature over the Response (before the assertion). */
  responseSigned: boolean;
  /** A signature inside a plain Assertion (undefined when the assertion is encrypted). */
  assertionSigned?: boolean;
  signatureAlgorithm?: string;
}

function readPostedResponse(samlResponse: string): Posted {
  const xml = Buffer.from(samlResponse, 'base64').toString('utf8');
  const el = (name: string) => `<(?:[\\w-]+:)?${name}\\b`;
  const encryptedKey = new RegExp(`${el('EncryptedKey')}[\\s\\S]*?</(?:[\\w-]+:)?EncryptedKey>`).exec(xml)?.[0] ?? '';
  const algorithm = (scope: string, name: string) => new RegExp(`${el(name)}[^>]*?Algorithm="([^"]+)"`).exec(scope)?.[1];
  const firstAssertion = xml.search(new RegExp(el('(?:Encrypted)?Assertion')));
  const firstSignature = xml.search(new RegExp(el('Signature')));
  const encrypted = new RegExp(el('EncryptedAssertion')).test(xml);
  const assertion = new RegExp(`${el('Assertion')}[\\s\\S]*</(?:[\\w-]+:)?Assertion>`).exec(xml)?.[0];
  return {
    encrypted,
    dataAlgorithm: new RegExp(`${el('EncryptedData')}[^>]*>\\s*${el('EncryptionMethod')}[^>]*?Algorithm="([^"]+)"`).exec(xml)?.[1],
    keyAlgorithm: algorithm(encryptedKey, 'EncryptionMethod'),
    digest: algorithm(encryptedKey, 'DigestMethod'),
    mgf: algorithm(encryptedKey, 'MGF'),
    responseSigned: firstSignature >= 0 && firstSignature < firstAssertion,
    assertionSigned: encrypted ? undefined : new RegExp(el('Signature')).test(assertion ?? ''),
    signatureAlgorithm: algorithm(xml, 'SignatureMethod'),
  };
}

/** Keycloak's POST to a connection's ACS, read (the next one this page sends). */
const acsPost = (page: Page, connection: Connection): Promise<Posted> =>
  page
    .waitForRequest((r) => r.url() === connection.sp.acsUrl && r.method() === 'POST')
    .then((r) => readPostedResponse(new URLSearchParams(r.postData() ?? '').get('SAMLResponse') ?? ''));

interface Attempt {
  page: Page;
  errors: string[];
  posted: Posted;
  /** The ACS's status: 303 to the continuation, or the refusal. */
  acsStatus: number;
  /** The refusal's JSON (status 4xx), or the continuation's answer (status 303). */
  body: Json;
}

/**
 * SP-initiated login at the connection's login URL (no OAuth request) in a fresh browser: Keycloak's login
 * form, the response posted to the ACS, and (accepted) the continuation's JSON in the same browser.
 */
async function attemptLogin(setup: SamlSetup): Promise<Attempt> {
  const { page, errors } = await newPage();
  const posted = acsPost(page, setup.connection);
  const acs = page.waitForResponse((r) => r.url() === setup.connection.sp.acsUrl);
  await page.goto(`${setup.connection.sp.loginUrl}?relayState=kc-${setup.realm}`);
  await keycloakSignIn(page, 'ada');
  const answer = await acs;
  if (answer.status() !== 303) return { page, errors, posted: await posted, acsStatus: answer.status(), body: await answer.json() };
  await arrive(page, errors, (u) => u.href.startsWith(`${s.issuer}/v1/sso/saml/${setup.connection.id}/continue?`));
  return { page, errors, posted: await posted, acsStatus: 303, body: await pageJson(page) };
}

/** An accepted login at the connection's login URL: the session's data. */
async function loginAtLoginUrl(setup: SamlSetup): Promise<Attempt & { data: Json }> {
  const attempt = await attemptLogin(setup);
  if (!attempt.body?.data) throw new Error(`login refused (ACS ${attempt.acsStatus}): ${JSON.stringify(attempt.body)}; the product answered: ${attempt.errors.join(' | ')}`);
  expect(attempt.body.data).toMatchObject({ connectionId: setup.connection.id, relayState: `kc-${setup.realm}` });
  return { ...attempt, data: attempt.body.data };
}

const verify = async (token: string) => (await s.api('POST', '/sessions/verify', { token })).body.data as Json;

/** The audit log's user.login entries of a connection, each in full (single lookups carry metadata). */
async function loginsOf(connectionId: string, ok: (entries: Json[]) => boolean): Promise<Json[]> {
  // Entries reach the log through identity's outbox and audit's ingestion: polled, a few seconds at most.
  return eventually(
    async () => {
      const page = (await s.api('GET', '/logs?limit=100&events=user.login')).body.data as Json[];
      const full = await Promise.all(page.map(async (e) => (await s.api('GET', `/logs/${e.id}`)).body.data as Json));
      return full.filter((e) => e.metadata?.connectionId === connectionId);
    },
    ok,
  );
}

// Runs without Keycloak too: the harness looks for the version the install script unpacks.
test('scripts/install-tools.sh installs the Keycloak version the harness starts', () => {
  const script = readFileSync(path.resolve(__dirname, '../../../scripts/install-tools.sh'), 'utf8');
  expect(script).toContain(`KEYCLOAK_VERSION=${KEYCLOAK_VERSION}\n`);
});

suite(TITLE, () => {
  beforeAll(async () => {
    // The client application: its callback, and its login initiation URL (initiate_login_uri) that starts
    // its own authorization request.
    appServer = createServer((req, res) => {
      if (req.url?.startsWith('/start') && appAuthorization) {
        res.statusCode = 302;
        res.setHeader('location', appAuthorization);
        res.end();
        return;
      }
      res.setHeader('content-type', 'text/html');
      res.end(`<!doctype html><title>Client app</title><p>Back at the client: ${req.url?.split('?')[0]}</p>`);
    });
    await new Promise<void>((resolve) => appServer.listen(0, '127.0.0.1', resolve));
    appBase = `http://127.0.0.1:${(appServer.address() as AddressInfo).port}`;
    // Keycloak (about 25 s) and the stack start side by side.
    const [keycloak, stack] = await Promise.allSettled([startKeycloak({ publicHost: 'localhost' }), startOAuthStack('keycloak', KEY)]);
    if (keycloak.status === 'fulfilled') kc = keycloak.value;
    if (stack.status === 'fulfilled') s = stack.value;
    if (keycloak.status === 'rejected') throw keycloak.reason;
    if (stack.status === 'rejected') throw stack.reason;
    browser = await launchChromium();
  });

  afterAll(async () => {
    for (const c of contexts) await c.close().catch(() => undefined);
    await browser?.close();
    await Promise.all([kc?.stop(), s?.stop()]);
    await new Promise<void>((resolve) => (appServer ? appServer.close(() => resolve()) : resolve()));
  });

  it('imports the SP metadata with Keycloak defaults: signed requests, signed assertions, encryption', async () => {
    const { client, connection } = await samlSetup('kc-import');
    expect(client).toMatchObject({ clientId: connection.sp.entityId, protocol: 'saml', redirectUris: [connection.sp.acsUrl], frontchannelLogout: true });
    expect(client.attributes).toMatchObject({
      'saml.client.signature': 'true',
      'saml.assertion.signature': 'true',
      'saml.server.signature': 'true',
      'saml.encrypt': 'true',
      'saml.signature.algorithm': 'RSA_SHA256',
      saml_name_id_format: 'email',
      saml_assertion_consumer_url_post: connection.sp.acsUrl,
      saml_single_logout_service_url_post: connection.sp.sloUrl,
    });
    // No algorithm is stored: Keycloak's defaults apply (xmlenc11#rsa-oaep, SHA-256 OAEP digest).
    for (const name of [ENC.algorithm, ENC.keyAlgorithm, ENC.digestMethod, ENC.maskGenerationFunction]) expect(client.attributes[name]).toBeUndefined();
  });

  it('SP-initiated from the OAuth login page ("Sign in with SSO"), Keycloak defaults: the user is created just in time and the login is audited', async () => {
    const setup = await samlSetup('kc-default');
    const client = await registerClient(s.api, { name: 'Keycloak portal', type: 'confidential', redirectUris: [`${appBase}/callback`], scopes: ['openid', 'email'], firstParty: true });
    const { url: authorize, verifier } = authorizationRequest(s.issuer, { client_id: client.clientId, redirect_uri: `${appBase}/callback`, scope: 'openid email', state: 'kc-state' });
    const { page, errors } = await newPage();
    const posted = acsPost(page, setup.connection);
    await page.goto(authorize.href);
    await page.fill('#sso-email', setup.email);
    await page.click('form.sso button[type=submit]');
    await keycloakSignIn(page, setup.email);
    // Keycloak's defaults on the wire: a signed Response, the assertion encrypted (AES-256-GCM), key transport
    // xmlenc11#rsa-oaep with a SHA-256 OAEP digest and MGF1-SHA-256.
    expect(await posted).toMatchObject({
      encrypted: true,
      responseSigned: true,
      dataAlgorithm: `${XMLENC11}aes256-gcm`,
      keyAlgorithm: `${XMLENC11}rsa-oaep`,
      digest: `${XMLENC}sha256`,
      mgf: `${XMLENC11}mgf1sha256`,
      signatureAlgorithm: RSA_SHA256,
    });
    await arrive(page, errors, `${appBase}/callback?**`);
    const back = new URL(page.url());
    expect(back.searchParams.get('state')).toBe('kc-state');
    const tokens = await exchangeCode(s.issuer, { code: back.searchParams.get('code')!, redirectUri: `${appBase}/callback`, verifier, client });
    expect(tokens).toMatchObject({ token_type: 'Bearer' });
    const userinfo: Json = await (await fetch(`${s.issuer}/oauth/userinfo`, { headers: { authorization: `Bearer ${tokens.access_token}` } })).json();
    expect(userinfo).toMatchObject({ email: setup.email, email_verified: true });
    const user = (await s.api('GET', `/users/${userinfo.sub}`)).body.data;
    expect(user).toMatchObject({ email: setup.email, roles: ['role_staff'] });

    const [login] = await loginsOf(setup.connection.id, (es) => es.some((e) => e.result === 'success'));
    expect(login).toMatchObject({ event: 'user.login', result: 'success', actor: { id: userinfo.sub }, metadata: { authMethod: 'saml', connectionId: setup.connection.id } });
  });

  it('IdP-initiated (Keycloak\'s IdP-initiated SSO URL): refused until the connection allows it, then on to the app', async () => {
    const setup = await samlSetup('kc-idp-init', { attributes: { ...NO_ENCRYPTION, saml_idp_initiated_sso_url_name: 'secsvc-portal' } });
    const idpInitiated = `${kc.publicUrl}/realms/${setup.realm}/protocol/saml/clients/secsvc-portal`;

    // Not allowed (the default): an unsolicited response is refused at the ACS.
    const first = await newPage();
    const refused = first.page.waitForResponse((r) => r.url() === setup.connection.sp.acsUrl);
    await first.page.goto(idpInitiated);
    await keycloakSignIn(first.page, 'ada');
    const acs = await refused;
    expect(acs.status()).toBe(401);
    expect(await acs.json()).toMatchObject({ error: { code: 'unauthorized', details: [{ field: 'SAMLResponse', message: expect.stringMatching(/InResponseTo/) }] } });

    // Allowed, with the app's login initiation URL: signed in on the OAuth login page, the app's authorization
    // request comes back with a code.
    const client = await registerClient(s.api, { name: 'Keycloak tiles', type: 'confidential', redirectUris: [`${appBase}/callback`], scopes: ['openid', 'email'], firstParty: true });
    const { url: authorize, verifier } = authorizationRequest(s.issuer, { client_id: client.clientId, redirect_uri: `${appBase}/callback`, scope: 'openid email', state: 'tile-state' });
    appAuthorization = authorize.href;
    const patched = await s.api('PATCH', `/sso/connections/${setup.connection.id}`, { allowIdpInitiated: true, initiateLoginUrl: `${appBase}/start` });
    expect(patched.body.data).toMatchObject({ allowIdpInitiated: true, initiateLoginUrl: `${appBase}/start` });
    const { page, errors } = await newPage();
    await page.goto(idpInitiated);
    await keycloakSignIn(page, 'ada');
    await arrive(page, errors, `${appBase}/callback?**`);
    const back = new URL(page.url());
    expect(back.searchParams.get('state')).toBe('tile-state');
    const tokens = await exchangeCode(s.issuer, { code: back.searchParams.get('code')!, redirectUri: `${appBase}/callback`, verifier, client });
    const userinfo: Json = await (await fetch(`${s.issuer}/oauth/userinfo`, { headers: { authorization: `Bearer ${tokens.access_token}` } })).json();
    expect(userinfo).toMatchObject({ email: setup.email, email_verified: true });
    const logins = await loginsOf(setup.connection.id, (es) => es.some((e) => e.result === 'success') && es.some((e) => e.result === 'failure'));
    expect(logins.find((e) => e.result === 'success')).toMatchObject({ actor: { id: userinfo.sub }, metadata: { authMethod: 'saml' } });
  });

  it('SP-initiated single logout (connection without IdP-initiated logins): Keycloak answers by HTTP-POST and the browser goes on to returnTo', async () => {
    const setup = await samlSetup('kc-sp-slo', { attributes: NO_ENCRYPTION, allowIdpInitiated: false });
    expect(setup.connection.allowIdpInitiated).toBe(false);
    const { page, errors, data } = await loginAtLoginUrl(setup);
    expect(data.provisioned).toBe(true);
    expect((await kc.admin('GET', `/admin/realms/${setup.realm}/users/${setup.userId}/sessions`)).body).toHaveLength(1);

    const started = await s.api('POST', '/sso/logout', { token: data.token, returnTo: `${appBase}/bye` });
    expect(started.status).toBe(200);
    expect(started.body.data.revoked).toBe(true);
    const logoutUrl = new URL(started.body.data.logoutUrl);
    expect(`${logoutUrl.origin}${logoutUrl.pathname}`).toBe(`${kc.publicUrl}/realms/${setup.realm}/protocol/saml`);
    const answered = page.waitForRequest((r) => r.url() === setup.connection.sp.sloUrl);
    await page.goto(logoutUrl.href);
    // Keycloak's LogoutResponse comes by HTTP-POST (the imported client forces the POST binding).
    expect((await answered).method()).toBe('POST');
    await arrive(page, errors, `${appBase}/bye`);
    expect((await verify(data.token)).valid).toBe(false);
    expect((await kc.admin('GET', `/admin/realms/${setup.realm}/users/${setup.userId}/sessions`)).body).toEqual([]);
  });

  it('IdP-initiated single logout (logging out at Keycloak in the browser): the product session is revoked', async () => {
    const setup = await samlSetup('kc-idp-slo', { attributes: NO_ENCRYPTION });
    const { page, errors, data } = await loginAtLoginUrl(setup);
    expect((await verify(data.token)).valid).toBe(true);
    // Keycloak's own logout page (no id_token_hint: it asks), then its front-channel logout of the SAML client:
    // a signed LogoutRequest posted to the SLO URL, our signed LogoutResponse redirected back.
    const slo = page.waitForResponse((r) => r.url().startsWith(setup.connection.sp.sloUrl));
    await page.goto(`${kc.publicUrl}/realms/${setup.realm}/protocol/openid-connect/logout`);
    await page.click('#kc-logout');
    const sloAnswer = await slo;
    expect([sloAnswer.request().method(), sloAnswer.status()]).toEqual(['POST', 302]);
    expect(sloAnswer.headers().location).toMatch(new RegExp(`^${kc.publicUrl}/realms/${setup.realm}/protocol/saml\\?SAMLResponse=`));
    await arrive(page, errors, (u) => u.href.startsWith(kc.publicUrl));
    await page.waitForLoadState();
    expect(await page.locator('body').textContent()).toMatch(/logged out/i);
    await eventually(async () => (await verify(data.token)).valid, (valid) => valid === false);
    const logouts = await eventually(
      async () => {
        const entries = (await s.api('GET', '/logs?limit=100&events=user.logout')).body.data as Json[];
        return Promise.all(entries.map(async (e) => (await s.api('GET', `/logs/${e.id}`)).body.data as Json));
      },
      (es) => es.some((e) => e.metadata?.connectionId === setup.connection.id),
    );
    expect(logouts.find((e) => e.metadata?.connectionId === setup.connection.id).metadata).toMatchObject({ authMethod: 'saml', singleLogout: 'idp' });
  });

  // Keycloak's signature and encryption settings, one realm each, logged in at the connection's login URL: what
  // Keycloak put on the wire, and whether the ACS took it.
  interface Variant {
    name: string;
    attributes: Record<string, string>;
    /** What the posted Response shows. */
    wire: Partial<Posted>;
    /** The ACS's reason for a refusal (401); absent: accepted. */
    refused?: RegExp;
    connection?: Record<string, unknown>;
  }
  const variants: Variant[] = [
    { name: 'encryption off, response and assertion signed', attributes: NO_ENCRYPTION, wire: { encrypted: false, responseSigned: true, assertionSigned: true } },
    { name: 'encryption off, only the assertion signed', attributes: { ...NO_ENCRYPTION, 'saml.server.signature': 'false' }, wire: { encrypted: false, responseSigned: false, assertionSigned: true } },
    { name: 'encryption off, only the response document signed', attributes: { ...NO_ENCRYPTION, 'saml.assertion.signature': 'false' }, wire: { encrypted: false, responseSigned: true, assertionSigned: false } },
    // Keycloak applies the OAEP digest and the MGF attributes only when the key transport is set explicitly; a
    // SHA-1 digest (the XML Encryption default) goes unnamed; its own defaults are SHA-256 and MGF1-SHA-256.
    {
      name: 'key transport rsa-oaep-mgf1p (Keycloak\'s default SHA-256 digest)',
      attributes: { [ENC.keyAlgorithm]: `${XMLENC}rsa-oaep-mgf1p` },
      wire: { encrypted: true, keyAlgorithm: `${XMLENC}rsa-oaep-mgf1p`, digest: `${XMLENC}sha256` },
    },
    {
      name: 'key transport rsa-oaep-mgf1p with a SHA-1 digest',
      attributes: { [ENC.keyAlgorithm]: `${XMLENC}rsa-oaep-mgf1p`, [ENC.digestMethod]: SHA1 },
      wire: { encrypted: true, keyAlgorithm: `${XMLENC}rsa-oaep-mgf1p`, digest: undefined },
    },
    {
      name: 'key transport xmlenc11#rsa-oaep, SHA-1 digest, MGF1-SHA-1',
      attributes: { [ENC.keyAlgorithm]: `${XMLENC11}rsa-oaep`, [ENC.digestMethod]: SHA1, [ENC.maskGenerationFunction]: `${XMLENC11}mgf1sha1` },
      wire: { encrypted: true, keyAlgorithm: `${XMLENC11}rsa-oaep`, digest: undefined, mgf: `${XMLENC11}mgf1sha1` },
    },
    {
      name: 'key transport xmlenc11#rsa-oaep, SHA-512 digest, MGF1-SHA-256',
      attributes: { [ENC.keyAlgorithm]: `${XMLENC11}rsa-oaep`, [ENC.digestMethod]: `${XMLENC}sha512`, [ENC.maskGenerationFunction]: `${XMLENC11}mgf1sha256` },
      wire: { encrypted: true, keyAlgorithm: `${XMLENC11}rsa-oaep`, digest: `${XMLENC}sha512`, mgf: `${XMLENC11}mgf1sha256` },
    },
    {
      name: 'key transport xmlenc11#rsa-oaep, SHA-256 digest, MGF1-SHA-512',
      attributes: { [ENC.keyAlgorithm]: `${XMLENC11}rsa-oaep`, [ENC.digestMethod]: `${XMLENC}sha256`, [ENC.maskGenerationFunction]: `${XMLENC11}mgf1sha512` },
      wire: { encrypted: true, keyAlgorithm: `${XMLENC11}rsa-oaep`, digest: `${XMLENC}sha256`, mgf: `${XMLENC11}mgf1sha512` },
    },
    {
      name: 'data encryption aes128-gcm',
      attributes: { [ENC.algorithm]: `${XMLENC11}aes128-gcm` },
      wire: { encrypted: true, dataAlgorithm: `${XMLENC11}aes128-gcm` },
    },
    {
      name: 'data encryption aes128-cbc under a Response signature',
      attributes: { [ENC.algorithm]: `${XMLENC}aes128-cbc` },
      wire: { encrypted: true, responseSigned: true, dataAlgorithm: `${XMLENC}aes128-cbc` },
    },
    {
      name: 'data encryption aes128-cbc without a Response signature (refused: CBC needs one)',
      attributes: { [ENC.algorithm]: `${XMLENC}aes128-cbc`, 'saml.server.signature': 'false' },
      wire: { encrypted: true, responseSigned: false, dataAlgorithm: `${XMLENC}aes128-cbc` },
      refused: /^cbc_needs_signed_response/,
    },
    {
      name: 'key transport rsa-1_5 (refused)',
      attributes: { [ENC.keyAlgorithm]: `${XMLENC}rsa-1_5` },
      wire: { encrypted: true, keyAlgorithm: `${XMLENC}rsa-1_5` },
      refused: /^key_transport_refused/,
    },
    {
      name: 'RSA-SHA1 signatures (refused by default)',
      attributes: { ...NO_ENCRYPTION, 'saml.signature.algorithm': 'RSA_SHA1' },
      wire: { encrypted: false, responseSigned: true, signatureAlgorithm: 'http://www.w3.org/2000/09/xmldsig#rsa-sha1' },
      refused: /^sha1_refused/,
    },
    {
      name: 'RSA-SHA1 signatures on a connection that allows SHA-1',
      attributes: { ...NO_ENCRYPTION, 'saml.signature.algorithm': 'RSA_SHA1' },
      wire: { encrypted: false, responseSigned: true, signatureAlgorithm: 'http://www.w3.org/2000/09/xmldsig#rsa-sha1' },
      connection: { allowSha1Signatures: true },
    },
  ];
  it.each(variants.map((v, i) => [v.name, { ...v, realm: `kc-v${i}` }] as const))('SP-initiated login with %s', async (_name, v) => {
    const setup = await samlSetup(v.realm, { attributes: v.attributes, connection: v.connection });
    for (const [k, value] of Object.entries(v.attributes)) expect(setup.client.attributes[k]).toBe(value);
    const attempt = await attemptLogin(setup);
    expect(attempt.posted).toMatchObject(v.wire);
    if (v.refused) {
      expect([attempt.acsStatus, attempt.body]).toEqual([401, { error: { code: 'unauthorized', message: 'The SAML response was refused', details: [{ field: 'SAMLResponse', message: expect.stringMatching(v.refused) }] }, meta: { requestId: expect.any(String) } }]);
      return;
    }
    if (!attempt.body?.data) throw new Error(`login refused (ACS ${attempt.acsStatus}): ${JSON.stringify(attempt.body)}`);
    expect(await verify(attempt.body.data.token)).toMatchObject({ valid: true, user: { email: setup.email, emailVerified: true } });
  });

  it('refuses an unsigned response (neither document nor assertion signed) at the ACS: 401 in the error shape', async () => {
    const setup = await samlSetup('kc-unsigned', { attributes: { ...NO_ENCRYPTION, 'saml.server.signature': 'false', 'saml.assertion.signature': 'false' } });
    const attempt = await attemptLogin(setup);
    expect(attempt.posted).toMatchObject({ encrypted: false, responseSigned: false, assertionSigned: false });
    expect(attempt.acsStatus).toBe(401);
    expect(attempt.body).toEqual({
      error: { code: 'unauthorized', message: 'The SAML response was refused', details: [{ field: 'SAMLResponse', message: expect.stringMatching(/signature/i) }] },
      meta: { requestId: expect.any(String) },
    });
    // Nobody was signed in or created: the audit log has the refusal only.
    const logins = await loginsOf(setup.connection.id, (es) => es.length >= 1);
    expect(logins.map((e) => [e.result, e.metadata.authMethod])).toEqual([['failure', 'saml']]);
  });

  it('Keycloak brokers logins to the product as an OpenID Connect provider (discovery, PKCE S256, ES256 ID token, userinfo)', async () => {
    const realm = 'kc-broker';
    const alias = 'secsvc';
    const user = await userWithPassword(s.api, 'grace@broker.example.com');
    await kc.createRealm(realm);
    const client = await registerClient(s.api, {
      name: 'Keycloak broker',
      type: 'confidential',
      redirectUris: [`${kc.publicUrl}/realms/${realm}/broker/${alias}/endpoint`],
      scopes: ['openid', 'email', 'profile'],
    });
    const discovery: Json = await (await fetch(`${s.issuer}/.well-known/openid-configuration`)).json();
    expect(discovery).toMatchObject({ id_token_signing_alg_values_supported: ['ES256'], code_challenge_methods_supported: ['S256'] });
    const idp = await kc.createOidcIdentityProvider(realm, {
      alias,
      discoveryUrl: `${s.issuer}/.well-known/openid-configuration`,
      clientId: client.clientId,
      clientSecret: client.clientSecret,
      clientAuthMethod: discovery.token_endpoint_auth_methods_supported.includes('client_secret_basic') ? 'client_secret_basic' : 'client_secret_post',
      config: { pkceEnabled: 'true', pkceMethod: 'S256', defaultScope: 'openid email profile', validateSignature: 'true', useJwksUrl: 'true', syncMode: 'IMPORT' },
      fields: { displayName: 'Security Service', trustEmail: true, updateProfileFirstLoginMode: 'off' },
    });
    // From the discovery document.
    expect(idp).toMatchObject({ alias, providerId: 'oidc', trustEmail: true });
    expect(idp.config).toMatchObject({
      issuer: s.issuer,
      authorizationUrl: `${s.issuer}/oauth/authorize`,
      tokenUrl: `${s.issuer}/oauth/token`,
      userInfoUrl: `${s.issuer}/oauth/userinfo`,
      jwksUrl: `${s.issuer}/.well-known/jwks.json`,
      pkceEnabled: 'true',
      pkceMethod: 'S256',
    });

    const { page, errors } = await newPage();
    const authorizations: URL[] = [];
    page.on('request', (r) => {
      if (r.url().startsWith(`${s.issuer}/oauth/authorize?`)) authorizations.push(new URL(r.url()));
    });
    await page.goto(`${kc.publicUrl}/realms/${realm}/account/`);
    await page.click(`#social-${alias}`);
    await page.waitForSelector('#email');
    expect(page.url().startsWith(`${s.issuer}/oauth/authorize?`)).toBe(true);
    await page.fill('#email', user.email);
    await page.fill('#password', PASSWORD);
    await page.click('button[type=submit]');
    // A third-party client: the consent page.
    await page.click('button[value=allow]');
    // First broker login: with the email trusted and the profile complete (Keycloak splits the `name` claim) no
    // page asks anything; should Keycloak still show its review-profile form, it is submitted as filled.
    await page.waitForURL((u) => u.href.startsWith(kc.publicUrl) && !u.pathname.includes('/broker/'), { timeout: 20_000 }).catch(() => undefined);
    if (await page.locator('#kc-update-profile-form, form#kc-idp-review-profile-form').count()) {
      for (const [field, value] of [['#firstName', 'Grace'], ['#lastName', 'Hopper']]) {
        if (await page.locator(field).count() && !(await page.inputValue(field))) await page.fill(field, value);
      }
      await page.click('input[type=submit], button[type=submit]');
    }
    await arrive(page, errors, (u) => u.href.startsWith(`${kc.publicUrl}/realms/${realm}/account`), 30_000);
    const first = authorizations[0]!;
    expect(first.searchParams.get('code_challenge_method')).toBe('S256');
    expect(first.searchParams.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(first.searchParams.get('client_id')).toBe(client.clientId);

    // Keycloak made the user from the ID token and userinfo, linked to the product's subject. Its emailVerified
    // follows the product's email_verified claim (false here: a user made through the API has not verified yet).
    const productUser = (await s.api('GET', `/users/${user.id}`)).body.data;
    const [brokered] = await kc.findUsers(realm, { email: user.email, exact: 'true' });
    expect(brokered).toMatchObject({ email: user.email, emailVerified: productUser.emailVerified, firstName: expect.any(String) });
    const links = (await kc.admin('GET', `/admin/realms/${realm}/users/${brokered.id}/federated-identity`)).body;
    expect(links).toEqual([expect.objectContaining({ identityProvider: alias, userId: user.id })]);
  });
});
