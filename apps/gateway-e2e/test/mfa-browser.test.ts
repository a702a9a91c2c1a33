/**
 * Passkeys and the OAuth login page's second step in a real browser: Debian's chromium driven by playwright-core,
 * with a CDP virtual authenticator (WebAuthn domain: CTAP2, internal, resident keys, user verification) standing in
 * for the platform authenticator. WebAuthn needs a domain, so the stack's public origin (ISSUER, and with it the
 * relying party id and the allowed origin) is http://localhost:<port>. Covers: registering a passkey through the
 * API from a page of that origin; the authorization code flow (openid-client) with the password and then the
 * passkey, or a TOTP code typed into the page; a passwordless passkey sign-in; and a cloned authenticator (a copy
 * of the credential's private key with a lower signature counter) being refused and recorded. Screenshots of the
 * pages go to apps/gateway-e2e/test-output/mfa/ (gitignored). Without chromium the suite is skipped with a note;
 * under CI=true a missing chromium is a failure.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type * as Oidc from 'openid-client' with { 'resolution-mode': 'import' };
import type { Browser, BrowserContext, CDPSession, Page } from 'playwright-core';
import { freePort } from '@secsvc/dev/stack';
import { browserSuite, launchChromium, watchedPage } from './chromium';
import { auditEntries, enrollTotp } from './mfa-support';
import { PASSWORD, registerClient, userWithPassword, type Json } from './oauth-support';
import { startTestStack, type Api } from './support';

jest.setTimeout(240_000);

const OUT = path.resolve(__dirname, '..', 'test-output', 'mfa');
const KEY = 'svc_sk_' + 'mfaBrowserTest_'.repeat(3);
const ACR_MFA = 'urn:secsvc:acr:mfa';
const SCOPE = 'openid email profile';

const suite = browserSuite('MFA in chromium: passkeys and the login page');

let stop: (() => Promise<void>) | undefined;
let api: Api;
/** The public origin: http://localhost:<port> (passkeys need a domain; 127.0.0.1 is not one). */
let issuer: string;
let baseUrl: string;
let oidc: typeof Oidc;
let config: Oidc.Configuration;
let browser: Browser;
let callbackServer: Server;
let redirectUri: string;
let client: { clientId: string; clientSecret?: string };

// The browser's WebAuthn objects, as far as page.evaluate uses them (this project's types have no DOM library).
interface BrowserCredential {
  id: string;
  rawId: ArrayBuffer;
  type: string;
  authenticatorAttachment: string | null;
  getClientExtensionResults(): Record<string, unknown>;
  response: {
    clientDataJSON: ArrayBuffer;
    attestationObject: ArrayBuffer;
    getTransports(): string[];
    getAuthenticatorData(): ArrayBuffer;
    getPublicKeyAlgorithm(): number;
    getPublicKey(): ArrayBuffer | null;
    authenticatorData: ArrayBuffer;
    signature: ArrayBuffer;
    userHandle: ArrayBuffer | null;
  };
}
type BrowserCredentials = { create(o: unknown): Promise<BrowserCredential>; get(o: unknown): Promise<BrowserCredential> };

/** The virtual authenticator of a page (a tab: it stays across navigations). */
interface VirtualAuthenticator {
  cdp: CDPSession;
  id: string;
}

async function addAuthenticator(page: Page): Promise<VirtualAuthenticator> {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('WebAuthn.enable', { enableUI: false });
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true },
  });
  return { cdp, id: authenticatorId };
}

const credentialsOf = async (a: VirtualAuthenticator) => (await a.cdp.send('WebAuthn.getCredentials', { authenticatorId: a.id })).credentials;

/** A browser context with JavaScript (the passkey pages run their one script) that records CSP violations. */
const newPage = () => watchedPage(browser);

/**
 * Registers a passkey for `userId` as an application would: the creation options from the API, then
 * navigator.credentials.create() in the page (which must be on the issuer's origin), then the credential's JSON
 * to the API. Returns the API's answer and the credential sent.
 */
async function registerPasskey(page: Page, userId: string, name: string) {
  const options = await api('POST', `/users/${userId}/mfa/passkeys/options`);
  expect(options.status).toBe(200);
  await page.bringToFront();
  const credential = await page.evaluate(async (publicKey: Json) => {
    const fromB64u = (s: string) => {
      const b = s.replace(/-/g, '+').replace(/_/g, '/');
      const bin = atob(b + '==='.slice((b.length + 3) % 4));
      return Uint8Array.from(bin, (c) => c.charCodeAt(0)).buffer;
    };
    const toB64u = (buf: ArrayBuffer) => btoa(String.fromCharCode(...new Uint8Array(buf))).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
    const credentials = (globalThis as unknown as { navigator: { credentials: BrowserCredentials } }).navigator.credentials;
    const created = await credentials.create({
      publicKey: {
        ...publicKey,
        challenge: fromB64u(publicKey.challenge),
        user: { ...publicKey.user, id: fromB64u(publicKey.user.id) },
        excludeCredentials: (publicKey.excludeCredentials ?? []).map((c: { id: string }) => ({ ...c, id: fromB64u(c.id) })),
      },
    });
    const r = created.response;
    return {
      id: created.id,
      rawId: toB64u(created.rawId),
      type: created.type,
      authenticatorAttachment: created.authenticatorAttachment ?? undefined,
      clientExtensionResults: created.getClientExtensionResults(),
      response: {
        clientDataJSON: toB64u(r.clientDataJSON),
        attestationObject: toB64u(r.attestationObject),
        transports: r.getTransports(),
        authenticatorData: toB64u(r.getAuthenticatorData()),
        publicKeyAlgorithm: r.getPublicKeyAlgorithm(),
        publicKey: toB64u(r.getPublicKey()!),
      },
    };
  }, options.body.data.publicKey);
  const res = await api('POST', `/users/${userId}/mfa/passkeys`, { challengeId: options.body.data.challengeId, name, credential });
  return { res, credential, options: options.body.data };
}

/**
 * navigator.credentials.get() in the page for request options (PublicKeyCredentialRequestOptionsJSON): the
 * assertion as AuthenticationResponseJSON, or the browser's error message.
 */
async function assert(page: Page, publicKey: Json): Promise<Json> {
  await page.bringToFront();
  return page.evaluate(async (options: Json) => {
    const fromB64u = (s: string) => {
      const b = s.replace(/-/g, '+').replace(/_/g, '/');
      const bin = atob(b + '==='.slice((b.length + 3) % 4));
      return Uint8Array.from(bin, (c) => c.charCodeAt(0)).buffer;
    };
    const toB64u = (buf: ArrayBuffer) => btoa(String.fromCharCode(...new Uint8Array(buf))).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
    try {
      const credentials = (globalThis as unknown as { navigator: { credentials: BrowserCredentials } }).navigator.credentials;
      const got = await credentials.get({
        publicKey: {
          ...options,
          challenge: fromB64u(options.challenge),
          allowCredentials: (options.allowCredentials ?? []).map((c: { id: string }) => ({ ...c, id: fromB64u(c.id) })),
        },
      });
      const r = got.response;
      return {
        id: got.id,
        rawId: toB64u(got.rawId),
        type: got.type,
        authenticatorAttachment: got.authenticatorAttachment ?? undefined,
        clientExtensionResults: got.getClientExtensionResults(),
        response: {
          clientDataJSON: toB64u(r.clientDataJSON),
          authenticatorData: toB64u(r.authenticatorData),
          signature: toB64u(r.signature),
          ...(r.userHandle ? { userHandle: toB64u(r.userHandle) } : {}),
        },
      };
    } catch (err) {
      return { error: String(err) };
    }
  }, publicKey);
}

/** A passwordless sign-in through the API with the page's authenticator: POST /auth/passkeys/login's answer. */
async function passwordlessApiLogin(page: Page) {
  const options = await fetch(`${baseUrl}/auth/passkeys/options`, { method: 'POST' }).then((r) => r.json() as Promise<Json>);
  const credential = await assert(page, options.data.publicKey);
  expect(credential.error).toBeUndefined();
  const res = await fetch(`${baseUrl}/auth/passkeys/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ challengeId: options.data.challengeId, credential }) });
  return { status: res.status, body: (await res.json()) as Json, credential };
}

/** An authorization request as openid-client builds it (PKCE, state, nonce). */
async function authorization(extra: Record<string, string> = {}) {
  const verifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  const nonce = oidc.randomNonce();
  const url = oidc.buildAuthorizationUrl(config, {
    redirect_uri: redirectUri,
    scope: SCOPE,
    state,
    nonce,
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    ...extra,
  });
  return { url, verifier, state, nonce };
}

/** From wherever the page is after signing in: consent (allowed) when shown, then the callback. */
async function backAtClient(page: Page): Promise<URL> {
  const callback = page.waitForURL(`${redirectUri}?**`, { timeout: 20_000 });
  const consent = page.locator('button[value=allow]').waitFor({ timeout: 20_000 }).then(() => 'consent' as const);
  const first = await Promise.race([callback.then(() => 'callback' as const), consent]).catch((err: unknown) => {
    throw new Error(`neither the client's callback nor the consent page came (at ${page.url()}: ${String(err)})`);
  });
  if (first === 'consent') {
    await page.click('button[value=allow]');
    await page.waitForURL(`${redirectUri}?**`);
  }
  return new URL(page.url());
}

/** The code exchange with ID token validation by openid-client (iss, aud, signature, nonce, exp, iat). */
async function exchange(callback: URL, a: { verifier: string; state: string; nonce: string }) {
  const tokens = await oidc.authorizationCodeGrant(config, callback, { pkceCodeVerifier: a.verifier, expectedState: a.state, expectedNonce: a.nonce, idTokenExpected: true });
  return { tokens, claims: tokens.claims()! };
}

const jwtClaims = (jwt: string): Json => JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString('utf8'));

suite('MFA in chromium: passkeys and the login page', () => {
  let ada: { id: string; email: string };
  /** Ada's browser: the tab whose virtual authenticator holds her passkey. */
  let adaTab: { context: BrowserContext; page: Page; problems: string[] };
  let adaKey: VirtualAuthenticator;
  let adaCredentialId: string;

  beforeAll(async () => {
    mkdirSync(OUT, { recursive: true });
    oidc = await import('openid-client');
    callbackServer = createServer((_req, res) => {
      res.setHeader('content-type', 'text/html');
      res.end('<!doctype html><title>Client app</title><p>Back at the client</p>');
    });
    await new Promise<void>((resolve) => callbackServer.listen(0, '127.0.0.1', resolve));
    redirectUri = `http://127.0.0.1:${(callbackServer.address() as AddressInfo).port}/callback`;

    const port = await freePort();
    issuer = `http://localhost:${port}`;
    const t = await startTestStack('mfa-browser', KEY, { ISSUER: issuer, RATE_LIMIT_ANONYMOUS_PER_MINUTE: '100000' }, { port });
    stop = t.stop;
    api = t.api;
    baseUrl = t.stack.baseUrl;
    client = await registerClient(api, { name: 'Partner app', type: 'confidential', redirectUris: [redirectUri], scopes: SCOPE.split(' ') });
    config = await oidc.discovery(new URL(issuer), client.clientId, undefined, oidc.ClientSecretBasic(client.clientSecret!), { execute: [oidc.allowInsecureRequests] });
    expect(config.serverMetadata().issuer).toBe(issuer);
    browser = await launchChromium();
    ada = await userWithPassword(api, 'ada.passkey@example.com');
  });

  afterAll(async () => {
    await browser?.close();
    await stop?.();
    await new Promise<void>((resolve) => (callbackServer ? callbackServer.close(() => resolve()) : resolve()));
  });

  it('(a) registers a passkey through the API with navigator.credentials.create() on the gateway origin', async () => {
    adaTab = await newPage();
    adaKey = await addAuthenticator(adaTab.page);
    // any page of the public origin: the discovery document
    const landed = await adaTab.page.goto(`${issuer}/.well-known/openid-configuration`);
    expect(landed!.status()).toBe(200);
    const { res, credential, options } = await registerPasskey(adaTab.page, ada.id, 'Laptop');
    expect(options.publicKey.rp.id).toBe('localhost');
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({ id: expect.stringMatching(/^mfa_/), userId: ada.id, type: 'passkey', name: 'Laptop', confirmed: true, lastUsedAt: null, backedUp: false });
    adaCredentialId = credential.id;

    // the authenticator holds a discoverable credential for localhost whose user handle is the user id
    const held = await credentialsOf(adaKey);
    expect(held).toHaveLength(1);
    expect(held[0]).toMatchObject({ isResidentCredential: true, rpId: 'localhost' });
    expect(Buffer.from(held[0]!.userHandle!, 'base64').toString('utf8')).toBe(ada.id);
    expect(Buffer.from(held[0]!.credentialId, 'base64').toString('base64url')).toBe(adaCredentialId);

    // the factor is listed; the next registration excludes this credential; the same answer twice is refused
    const factors = (await api('GET', `/users/${ada.id}/mfa/factors`)).body.data;
    expect(factors).toEqual([expect.objectContaining({ type: 'passkey', name: 'Laptop' })]);
    const next = await api('POST', `/users/${ada.id}/mfa/passkeys/options`);
    expect(next.body.data.publicKey.excludeCredentials.map((c: { id: string }) => c.id)).toEqual([adaCredentialId]);
    const replay = await api('POST', `/users/${ada.id}/mfa/passkeys`, { challengeId: options.challengeId, credential });
    expect(replay.status).toBe(400);
    await auditEntries(api, 'user.mfa.factor_added', ada.id, (es) => es.some((e) => e.metadata?.factorType === 'passkey'));

    // a ceremony on another origin of the same host (the client's, http://localhost:<its port>): the browser
    // signs for the rp id localhost, the service refuses the origin
    const elsewhere = await newPage();
    await addAuthenticator(elsewhere.page);
    await elsewhere.page.goto(redirectUri.replace('127.0.0.1', 'localhost'));
    const other = await userWithPassword(api, 'other.origin@example.com');
    const wrongOrigin = await registerPasskey(elsewhere.page, other.id, 'Wrong origin');
    expect(wrongOrigin.res.status).toBe(400);
    expect((await api('GET', `/users/${other.id}/mfa/factors`)).body.data).toEqual([]);
    await elsewhere.context.close();
  });

  it('(b) the code flow: password, then "Use a passkey" on the MFA page; the ID token has amr hwk+mfa, acr and auth_time', async () => {
    const { page, problems } = adaTab;
    const a = await authorization();
    const started = Math.floor(Date.now() / 1000);
    const first = await page.goto(a.url.href);
    expect(first!.status()).toBe(200);
    await page.screenshot({ path: path.join(OUT, '1-login.png'), fullPage: true });
    await page.fill('#email', ada.email);
    await page.fill('#password', PASSWORD);
    const answered = page.waitForResponse((r) => r.url().startsWith(`${issuer}/oauth/authorize`) && r.request().method() === 'POST');
    await page.click('form:has(#password) button[type=submit]');
    // the second step: its page may run this server's script (the passkey's), nothing else
    const mfaHeaders = (await answered).headers();
    expect(mfaHeaders['content-security-policy']).toContain("script-src 'self'");
    expect(mfaHeaders['content-security-policy']).toContain("frame-ancestors 'none'");
    await expect(page.locator('h1').textContent()).resolves.toBe('Two-step verification');
    const button = page.locator('#passkey-button');
    await button.waitFor({ state: 'visible' });
    expect(await button.textContent()).toBe('Use a passkey');
    await page.screenshot({ path: path.join(OUT, '2-mfa-passkey.png'), fullPage: true });
    await button.click();
    const callback = await backAtClient(page);
    expect(callback.searchParams.get('state')).toBe(a.state);
    expect(callback.searchParams.get('iss')).toBe(issuer);

    const { tokens, claims } = await exchange(callback, a);
    expect(claims).toMatchObject({ iss: issuer, sub: ada.id, aud: client.clientId, acr: ACR_MFA });
    expect(claims.amr).toEqual(expect.arrayContaining(['pwd', 'hwk', 'mfa']));
    expect(typeof claims.auth_time).toBe('number');
    expect(claims.auth_time as number).toBeGreaterThanOrEqual(started - 5);
    expect(claims.auth_time as number).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000) + 5);
    const access = jwtClaims(tokens.access_token);
    expect(access).toMatchObject({ acr: ACR_MFA, auth_time: claims.auth_time });
    expect(access.amr).toEqual(expect.arrayContaining(['hwk', 'mfa']));
    // introspection says the same
    const introspected = await oidc.tokenIntrospection(config, tokens.access_token);
    expect(introspected).toMatchObject({ active: true, acr: ACR_MFA });
    expect(introspected.amr).toEqual(expect.arrayContaining(['hwk', 'mfa']));

    // the passkey was used (its counter moved on) and the login is in the audit log
    expect((await credentialsOf(adaKey))[0]!.signCount).toBeGreaterThan(0);
    const factor = (await api('GET', `/users/${ada.id}/mfa/factors`)).body.data[0];
    expect(factor.lastUsedAt).not.toBeNull();
    const logins = await auditEntries(api, 'user.login', ada.id, (es) => es.some((e) => e.metadata?.mfaFactor === 'passkey'));
    expect(logins.find((e) => e.metadata?.mfaFactor === 'passkey').metadata).toMatchObject({ mfaUsed: true, authMethod: 'oauth', clientId: client.clientId });
    expect(problems).toEqual([]);
  });

  it('(c) the code flow with a TOTP code typed into the MFA page (a wrong code is shown as an error first)', async () => {
    const tom = await userWithPassword(api, 'tom.totp@example.com');
    const { app } = await enrollTotp(api, tom.id);
    const { context, page, problems } = await newPage();
    const a = await authorization();
    await page.goto(a.url.href);
    await page.fill('#email', tom.email);
    await page.fill('#password', PASSWORD);
    await page.click('form:has(#password) button[type=submit]');
    await expect(page.locator('h1').textContent()).resolves.toBe('Two-step verification');
    // no passkey for Tom: no passkey button, and the page runs no script at all
    expect(await page.locator('#passkey-button').count()).toBe(0);
    expect(await page.content()).not.toMatch(/<script/i);
    await page.screenshot({ path: path.join(OUT, '3-mfa-totp.png'), fullPage: true });

    const wrong = String((Number(app.now().code) + 3) % 1_000_000).padStart(6, '0');
    await page.fill('#code', wrong);
    await page.click('form:has(#code) button[type=submit]');
    await expect(page.locator('.error').textContent()).resolves.toMatch(/code/i);
    expect(await page.locator('h1').textContent()).toBe('Two-step verification');
    await page.screenshot({ path: path.join(OUT, '4-mfa-totp-wrong.png'), fullPage: true });

    await page.fill('#code', await app.next());
    await page.click('form:has(#code) button[type=submit]');
    const callback = await backAtClient(page);
    const { claims } = await exchange(callback, a);
    expect(claims).toMatchObject({ sub: tom.id, acr: ACR_MFA });
    expect(claims.amr).toEqual(expect.arrayContaining(['pwd', 'otp', 'mfa']));
    expect(claims.amr).not.toContain('hwk');
    expect(typeof claims.auth_time).toBe('number');
    expect(problems).toEqual([]);
    await context.close();
  });

  it('(d) a passwordless sign-in: "Sign in with a passkey" on the login page', async () => {
    // Lin has no password at all: only a passkey, registered from the login page's origin in her own browser
    const lin = (await api('POST', '/users', { email: 'lin.passwordless@example.com', name: 'Lin' })).body.data as { id: string; email: string };
    const { context, page, problems } = await newPage();
    const key = await addAuthenticator(page);
    const a = await authorization();
    await page.goto(a.url.href);
    const registered = await registerPasskey(page, lin.id, 'Phone');
    expect(registered.res.status).toBe(201);
    expect(await credentialsOf(key)).toHaveLength(1);

    await page.reload();
    const button = page.locator('#passkey-button');
    await button.waitFor({ state: 'visible' });
    expect(await button.textContent()).toBe('Sign in with a passkey');
    await page.screenshot({ path: path.join(OUT, '5-login-passkey.png'), fullPage: true });
    await button.click();
    const callback = await backAtClient(page);
    const { claims } = await exchange(callback, a);
    expect(claims).toMatchObject({ sub: lin.id, email: lin.email, acr: ACR_MFA });
    expect(claims.amr).toEqual(expect.arrayContaining(['hwk', 'user', 'mfa']));
    expect(claims.amr).not.toContain('pwd');
    expect(typeof claims.auth_time).toBe('number');
    const logins = await auditEntries(api, 'user.login', lin.id, (es) => es.length >= 1);
    expect(logins[0].metadata).toMatchObject({ mfaUsed: true, mfaFactor: 'passkey' });
    expect(problems).toEqual([]);
    await context.close();
  });

  it('(e) a cloned authenticator (same key, lower signature counter) is refused and recorded as cloned_authenticator', async () => {
    // the genuine authenticator signs in once more, so the service has seen a counter above the clone's
    await adaTab.page.goto(`${issuer}/.well-known/openid-configuration`);
    const genuine = await passwordlessApiLogin(adaTab.page);
    expect(genuine.status).toBe(201);
    expect(genuine.body.data).toMatchObject({ userId: ada.id, acr: ACR_MFA });
    expect(genuine.body.data.amr).toEqual(expect.arrayContaining(['hwk', 'user', 'mfa']));
    const [original] = await credentialsOf(adaKey);
    expect(original!.signCount).toBeGreaterThanOrEqual(2);

    // the copy: the private key exported from the first authenticator into a second one, counter back at 0
    const copy = await newPage();
    const clone = await addAuthenticator(copy.page);
    await clone.cdp.send('WebAuthn.addCredential', {
      authenticatorId: clone.id,
      credential: { credentialId: original!.credentialId, isResidentCredential: true, rpId: 'localhost', privateKey: original!.privateKey, userHandle: original!.userHandle, signCount: 0 },
    });
    await copy.page.goto(`${issuer}/.well-known/openid-configuration`);
    const cloned = await passwordlessApiLogin(copy.page);
    expect(cloned.credential.id).toBe(adaCredentialId);
    expect(cloned.status).toBe(401);
    expect(cloned.body.error.code).toBe('unauthorized');
    expect(cloned.body.data).toBeUndefined();

    // on the login page the clone is refused too: an error, no redirect
    const a = await authorization();
    await copy.page.goto(a.url.href);
    await copy.page.locator('#passkey-button').click();
    await copy.page.locator('.error:not([hidden])').waitFor();
    expect(await copy.page.locator('.error:not([hidden])').textContent()).toMatch(/passkey/i);
    expect(copy.page.url().startsWith(issuer)).toBe(true);
    await copy.page.screenshot({ path: path.join(OUT, '6-cloned-passkey.png'), fullPage: true });

    const failures = await auditEntries(api, 'user.mfa.failed', ada.id, (es) => es.filter((e) => e.metadata?.reason === 'cloned_authenticator').length >= 2);
    expect(failures.find((e) => e.metadata?.reason === 'cloned_authenticator')).toMatchObject({ result: 'failure', actor: { id: ada.id } });

    // the genuine authenticator still works
    expect((await passwordlessApiLogin(adaTab.page)).status).toBe(201);
    await copy.context.close();
  });

  it('(f) a session steps up with a passkey through the API (POST /auth/step-up/options, then /auth/step-up)', async () => {
    // a session the application opened (no authentication of its own), as the session's bearer
    const opened = await api('POST', '/sessions', { userId: ada.id });
    expect(opened.status).toBe(201);
    const token = opened.body.data.token as string;
    const asAda = async (p: string, body?: unknown) => {
      const res = await fetch(`${baseUrl}${p}`, { method: 'POST', headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) }, body: body ? JSON.stringify(body) : undefined });
      return { status: res.status, body: (await res.json()) as Json };
    };
    const options = await asAda('/auth/step-up/options');
    expect(options.status).toBe(200);
    expect(options.body.data.publicKey.allowCredentials.map((c: { id: string }) => c.id)).toEqual([adaCredentialId]);
    expect(options.body.data.publicKey.userVerification).toBe('required');
    await adaTab.page.goto(`${issuer}/.well-known/openid-configuration`);
    const credential = await assert(adaTab.page, options.body.data.publicKey);
    expect(credential.error).toBeUndefined();
    const stepped = await asAda('/auth/step-up', { type: 'passkey', challengeId: options.body.data.challengeId, credential });
    expect(stepped.status).toBe(200);
    expect(stepped.body.data).toMatchObject({ id: opened.body.data.id, userId: ada.id, acr: ACR_MFA });
    expect(stepped.body.data.amr).toEqual(expect.arrayContaining(['hwk', 'user', 'mfa']));
    expect(stepped.body.data.mfaAt).not.toBeNull();
    // the challenge answered once
    const again = await asAda('/auth/step-up', { type: 'passkey', challengeId: options.body.data.challengeId, credential });
    expect(again.status).toBe(400);
    await auditEntries(api, 'user.mfa.step_up', ada.id, (es) => es.some((e) => e.metadata?.mfaFactor === 'passkey'));
  });

  it('(g) a client asking for acr_values=urn:secsvc:acr:mfa gets the step-up page for a password-only login', async () => {
    const sam = await userWithPassword(api, 'sam.stepup@example.com');
    const { context, page, problems } = await newPage();
    // a password-only login at the authorization server
    const a1 = await authorization();
    await page.goto(a1.url.href);
    await page.fill('#email', sam.email);
    await page.fill('#password', PASSWORD);
    await page.click('form:has(#password) button[type=submit]');
    const first = await exchange(await backAtClient(page), a1);
    expect(first.claims).toMatchObject({ sub: sam.id, acr: 'urn:secsvc:acr:1fa', amr: ['pwd'] });

    // Sam gets an authenticator app; the client asks for MFA
    const { app } = await enrollTotp(api, sam.id);
    const a2 = await authorization({ acr_values: ACR_MFA });
    await page.goto(a2.url.href);
    await expect(page.locator('h1').textContent()).resolves.toBe('Two-step verification');
    expect(await page.locator('p.muted').first().textContent()).toContain('confirm it is you');
    await page.screenshot({ path: path.join(OUT, '7-step-up.png'), fullPage: true });
    await page.fill('#code', await app.next());
    await page.click('form:has(#code) button[type=submit]');
    const stepped = await exchange(await backAtClient(page), a2);
    expect(stepped.claims).toMatchObject({ sub: sam.id, acr: ACR_MFA });
    expect(stepped.claims.amr).toEqual(expect.arrayContaining(['pwd', 'otp', 'mfa']));
    expect(stepped.claims.auth_time as number).toBeGreaterThanOrEqual(first.claims.auth_time as number);
    expect(problems).toEqual([]);
    await context.close();
  });
});
