/**
 * SAML SSO at the gateway: connections with IdP metadata validation, SP metadata, SP-initiated login
 * (signed AuthnRequest over HTTP-Redirect) and the ACS with a real identity provider built in the test
 * (its key and certificate made now, assertions signed with xml-crypto), and each attack refused on its own.
 * Identity is an in-memory fake here (its side runs against Postgres in apps/identity/test/sso.test.ts).
 */
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { createVerify, X509Certificate } from 'node:crypto';
import { inflateRawSync } from 'node:zlib';
import { DOMParser } from '@xmldom/xmldom';
import { SignedXml } from 'xml-crypto';
import { createLogger, Metrics } from '@secsvc/shared';
import { createApp, type GatewayDeps } from '../src/app';
import { parseIdpMetadata } from '../src/sso/metadata';
import { spUrls, type SpKeys } from '../src/sso/sp';
import { VALID_KEY, type IdentityPort } from './support/fake-identity';
import { FAKE_TOTP_CODE, FakeSsoIdentity } from './support/fake-sso-identity';
import { assertionXml, encryptAssertion, samlId, selfSignedCertificate, signAssertion, signRoot, startTestIdp, wrapResponse, type EncryptionOptions, type ResponseOptions, type TestIdp } from './support/saml-idp';

const BASE = 'https://sp.example.com';
let url: string;
let fake: FakeSsoIdentity;
let idp: TestIdp;
let sp: { privateKey: string; certificate: string };

const logger = createLogger('test', 'silent');

/** A gateway app over the shared fake identity with these SP keys; closed after all tests. */
const servers: Server[] = [];
async function startGateway(keys: SpKeys): Promise<string> {
  const deps: GatewayDeps = {
    config: { GRPC_DEADLINE_MS: 1000, TRUST_PROXY: ['loopback'], HOST: '127.0.0.1', PORT: 0 },
    clients: { identity: fake as unknown as IdentityPort, policy: {} as never, audit: {} as never },
    logger,
    metrics: new Metrics('test'),
    ready: async () => true,
    sso: { baseUrl: BASE, keys, clockSkewMs: 30_000, requestTtlSeconds: 600 },
  };
  const app = createApp(deps);
  const s = await new Promise<Server>((resolve, reject) => {
    const started = app.listen(0, '127.0.0.1', (err?: Error) => (err ? reject(err) : resolve(started)));
  });
  servers.push(s);
  return `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
}

beforeAll(async () => {
  idp = await startTestIdp('acme');
  sp = await selfSignedCertificate('sp.example.com');
  fake = new FakeSsoIdentity();
  url = await startGateway(sp);
}, 30_000);

afterAll(async () => {
  for (const server of servers) {
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }
});

const auth = { authorization: `Bearer ${VALID_KEY}`, 'content-type': 'application/json' };

async function createConnection(body: Record<string, unknown>) {
  const res = await fetch(`${url}/v1/sso/connections`, { method: 'POST', headers: auth, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as { data?: { id: string; sp: Record<string, string> }; error?: { code: string; details: { field: string; message: string }[] } } };
}

let domainCounter = 0;
async function connection(extra: Record<string, unknown> = {}) {
  const created = await createConnection({ name: 'Acme', idpMetadataXml: idp.metadata(), domains: [`acme${domainCounter++}.example.com`], ...extra });
  expect(created.status).toBe(201);
  return created.body.data!;
}

type Answer = { status: number; body: { data?: { token: string; relayState: string }; error?: { code: string; details: { field: string; message: string }[] } } };

/** The browser-bound continuation the ACS sends a browser to (its state), or undefined for any other answer. */
function continuation(res: Response): string | undefined {
  const location = res.status === 303 ? res.headers.get('location') : null;
  return location?.startsWith(BASE) && location.includes('/continue?state=') ? location.slice(BASE.length) : undefined;
}

/** GET of the continuation (the browser following the ACS's 303), with this browser's cookie or none. */
async function follow(path: string, cookie?: string): Promise<Answer> {
  const res = await fetch(`${url}${path}`, { redirect: 'manual', headers: cookie ? { cookie } : {} });
  return { status: res.status, body: (await res.json()) as Answer['body'] };
}

/**
 * The IdP's cross-site POST to the ACS (no cookie comes with it); a browser-bound login is then followed to
 * its continuation with `cookie`, the cookie of the browser that started it.
 */
async function postAcs(connectionId: string, samlResponse: string, relayState?: string, cookie?: string): Promise<Answer> {
  const form = new URLSearchParams({ SAMLResponse: samlResponse, ...(relayState !== undefined && { RelayState: relayState }) });
  const res = await fetch(`${url}/v1/sso/saml/${connectionId}/acs`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: form, redirect: 'manual' });
  const next = continuation(res);
  if (next) return follow(next, cookie);
  return { status: res.status, body: (await res.json()) as Answer['body'] };
}

/** SP-initiated: the AuthnRequest id the gateway sent (and stored) and the browser's binding cookie. */
async function login(connectionId: string, relayState = 'state-1', cookie?: string): Promise<{ location: URL; requestId: string; cookie: string }> {
  const res = await fetch(`${url}/v1/sso/saml/${connectionId}/login?relayState=${relayState}`, { redirect: 'manual', headers: cookie ? { cookie } : {} });
  expect(res.status).toBe(302);
  const location = new URL(res.headers.get('location')!);
  const xml = inflateRawSync(Buffer.from(location.searchParams.get('SAMLRequest')!, 'base64')).toString('utf8');
  const setCookie = res.headers.get('set-cookie')!;
  // https: a __Host- cookie (Secure, Path=/, no Domain), which no subdomain or plain-http response can plant.
  expect(setCookie).toMatch(/^__Host-secsvc_saml_binding=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Lax; Secure; Max-Age=600$/);
  return { location, requestId: /ID="([^"]+)"/.exec(xml)![1]!, cookie: setCookie.slice(0, setCookie.indexOf(';')) };
}

function base(c: { id: string }, email: string, extra: Partial<ResponseOptions> = {}): ResponseOptions {
  const urls = spUrls(BASE, c.id);
  return { acsUrl: urls.acsUrl, audience: urls.entityId, email, ...extra };
}

async function expectRefused(connectionId: string, samlResponse: string, reason: RegExp) {
  const before = fake.failures.length;
  const out = await postAcs(connectionId, samlResponse);
  expect(out.status).toBe(401);
  expect(out.body.error).toMatchObject({ code: 'unauthorized' });
  expect(out.body.error!.details[0]!.field).toBe('SAMLResponse');
  expect(out.body.error!.details[0]!.message).toMatch(reason);
  // Recorded as a failed user.login with the reason.
  expect(fake.failures.length).toBe(before + 1);
  expect(fake.failures.at(-1)).toMatchObject({ connectionId, reason: expect.stringMatching(reason) });
}

describe('IdP metadata', () => {
  it('reads the entity id, the HTTP-Redirect SSO URL and the signing certificates', () => {
    const m = parseIdpMetadata(idp.metadata());
    expect(m).toMatchObject({ entityId: idp.entityId, ssoUrl: idp.ssoUrl });
    expect(new X509Certificate(m.certificates[0]!).fingerprint256).toBe(new X509Certificate(idp.certificate).fingerprint256);
  });

  it('answers 400 naming idpMetadataXml: unparsable, no certificate, expired, not a certificate, DTD', async () => {
    const expired = await selfSignedCertificate('old.test', new Date(Date.now() - 2 * 86_400_000), new Date(Date.now() - 86_400_000));
    const cases: [string, RegExp][] = [
      ['<md:EntityDescriptor', /well-formed/],
      [idp.metadata({ noCertificate: true }), /signing certificate/],
      [idp.metadata({ certificate: expired.certificate }), /expired/],
      [idp.metadata({ certificate: '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----' }), /does not parse/],
      ['<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]>' + idp.metadata().replace('<?xml version="1.0"?>', ''), /DTD/],
      ['<html/>', /EntityDescriptor/],
    ];
    for (const [xml, message] of cases) {
      const out = await createConnection({ name: 'Bad', idpMetadataXml: xml, domains: ['bad.example.com'] });
      expect([out.status, out.body.error?.details[0]?.field]).toEqual([400, 'idpMetadataXml']);
      expect(out.body.error!.details[0]!.message).toMatch(message);
    }
  });

  it('names other faulty fields of the body', async () => {
    const out = await createConnection({ name: '', idpMetadataXml: idp.metadata(), domains: ['Not a domain'], defaultRoles: ['admin'], extra: 1 });
    expect(out.status).toBe(400);
    expect(out.body.error!.details.map((d) => d.field).sort()).toEqual(['defaultRoles[0]', 'domains[0]', 'extra', 'name'].sort());
  });
});

describe('connections API', () => {
  it('creates (201 with the SP metadata URL), reads, lists, updates and deletes', async () => {
    const c = await connection({ defaultRoles: ['role_reader'], attributeMapping: { email: 'mail' } });
    const { entityId, metadataUrl, acsUrl, loginUrl, sloUrl } = spUrls(BASE, c.id);
    expect(c.sp).toEqual({ entityId, metadataUrl, acsUrl, loginUrl, sloUrl });
    const get = (await (await fetch(`${url}/v1/sso/connections/${c.id}`, { headers: auth })).json()) as { data: unknown };
    expect(get.data).toMatchObject({ id: c.id, defaultRoles: ['role_reader'], attributeMapping: { email: 'mail' }, allowIdpInitiated: false, requireMfa: false, idp: { entityId: idp.entityId } });
    const list = (await (await fetch(`${url}/v1/sso/connections`, { headers: auth })).json()) as { data: { id: string }[] };
    expect(list.data.map((x) => x.id)).toContain(c.id);
    const patched = await fetch(`${url}/v1/sso/connections/${c.id}`, { method: 'PATCH', headers: auth, body: JSON.stringify({ allowIdpInitiated: true }) });
    expect(((await patched.json()) as { data: { allowIdpInitiated: boolean } }).data.allowIdpInitiated).toBe(true);
    const badPatch = await fetch(`${url}/v1/sso/connections/${c.id}`, { method: 'PATCH', headers: auth, body: JSON.stringify({ idpMetadataXml: idp.metadata({ noCertificate: true }) }) });
    expect(badPatch.status).toBe(400);
    expect((await fetch(`${url}/v1/sso/connections/${c.id}`, { method: 'DELETE', headers: auth })).status).toBe(204);
    expect((await fetch(`${url}/v1/sso/connections/${c.id}`, { headers: auth })).status).toBe(404);
    expect((await fetch(`${url}/v1/sso/connections`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } })).status).toBe(401);
  });
});

describe('SP endpoints', () => {
  it('serves SP metadata: entity id, ACS URL (HTTP-POST) and the SP certificate', async () => {
    const c = await connection();
    const res = await fetch(`${url}/v1/sso/saml/${c.id}/metadata`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/samlmetadata\+xml/);
    const xml = await res.text();
    expect(xml).toContain(`entityID="${c.sp.entityId}"`);
    expect(xml).toContain(`Location="${c.sp.acsUrl}"`);
    expect(xml).toContain('WantAssertionsSigned="true"');
    // Signed by the SP over the whole EntityDescriptor: valid with the SP certificate, not after a change.
    const verify = (doc: string, certificate: string) => {
      const parsed = new DOMParser().parseFromString(doc, 'text/xml');
      const signature = parsed.getElementsByTagNameNS('http://www.w3.org/2000/09/xmldsig#', 'Signature')[0]!;
      const check = new SignedXml({ publicCert: certificate });
      check.loadSignature(signature);
      // xml-crypto answers false for a changed document and throws for a signature of another key.
      try {
        return check.checkSignature(doc);
      } catch {
        return false;
      }
    };
    expect(verify(xml, sp.certificate)).toBe(true);
    expect(verify(xml.replace(c.sp.acsUrl, 'https://evil.example.org/acs'), sp.certificate)).toBe(false);
    expect(verify(xml, idp.certificate)).toBe(false);
    expect(xml).toContain(sp.certificate.replace(/-----[A-Z ]+-----/g, '').replace(/\s+/g, '').slice(0, 64));
    expect((await fetch(`${url}/v1/sso/saml/sso_nope/metadata`)).status).toBe(404);
  });

  it('redirects to the IdP with a signed AuthnRequest (verifiable with the SP certificate) and the RelayState', async () => {
    const c = await connection();
    const { location, requestId } = await login(c.id, 'back-to-app');
    expect(`${location.origin}${location.pathname}`).toBe(idp.ssoUrl);
    expect(location.searchParams.get('RelayState')).toBe('back-to-app');
    expect(fake.requests.get(requestId)).toEqual({ connectionId: c.id, returnTo: '', binding: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/) });
    // HTTP-Redirect binding signature: over SAMLRequest, RelayState and SigAlg as they appear in the query.
    const raw = location.search.slice(1).split('&');
    const pick = (k: string) => raw.find((p) => p.startsWith(`${k}=`))!;
    const signed = [pick('SAMLRequest'), pick('RelayState'), pick('SigAlg')].join('&');
    const ok = createVerify('RSA-SHA256').update(signed).verify(sp.certificate, location.searchParams.get('Signature')!, 'base64');
    expect(ok).toBe(true);
    const tooLong = await fetch(`${url}/v1/sso/saml/${c.id}/login?relayState=${'x'.repeat(81)}`, { redirect: 'manual' });
    expect(tooLong.status).toBe(400);
  });

  it('accepts a signed response to its request: the email, assertion id and expiry go to identity, a session comes back', async () => {
    const c = await connection();
    const { requestId, cookie } = await login(c.id);
    const email = 'ada@acme.example.com';
    const assertionId = samlId();
    const out = await postAcs(c.id, idp.response(base(c, email, { inResponseTo: requestId, assertionId })), 'state-1', cookie);
    expect(out.status).toBe(200);
    expect(out.body.data).toMatchObject({ token: expect.stringMatching(/^ses_/), relayState: 'state-1' });
    const sent = fake.logins.at(-1)!;
    expect(sent).toMatchObject({ connectionId: c.id, assertionId, email, nameId: email });
    expect(Date.parse(sent.assertionExpiresAt!)).toBeGreaterThan(Date.now());
    // The request id was used up.
    expect(fake.requests.has(requestId)).toBe(false);
  });

  it('decrypts an encrypted assertion with the SP key, and still requires its signature inside', async () => {
    const c = await connection({ allowIdpInitiated: true });
    const o = base(c, 'enc@acme.example.com');
    const now = new Date();
    const id = samlId();
    const signed = signAssertion(assertionXml(idp.entityId, o, id, now), id, idp.privateKey, idp.certificate);
    const out = await postAcs(c.id, Buffer.from(wrapResponse(idp.entityId, o, await encryptAssertion(signed, sp.certificate), now)).toString('base64'));
    expect(out.status).toBe(200);
    expect(fake.logins.at(-1)).toMatchObject({ email: 'enc@acme.example.com', assertionId: id });
    const unsigned = assertionXml(idp.entityId, o, samlId(), now);
    await expectRefused(c.id, Buffer.from(wrapResponse(idp.entityId, o, await encryptAssertion(unsigned, sp.certificate), now)).toString('base64'), /Invalid signature/);
  });

  it('reads the email and name from mapped attributes', async () => {
    const c = await connection({ attributeMapping: { email: 'mail', name: 'displayName' }, allowIdpInitiated: true });
    const out = await postAcs(c.id, idp.response(base(c, 'opaque-id-123', { attributes: { mail: 'grace@acme.example.com', displayName: 'Grace H' } })));
    expect(out.status).toBe(200);
    expect(fake.logins.at(-1)).toMatchObject({ email: 'grace@acme.example.com', name: 'Grace H', nameId: 'opaque-id-123' });
  });
});

describe('connections that require MFA the IdP did not assert (requireMfa)', () => {
  const PASSWORD_CLASS = 'urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport';
  const form = { 'content-type': 'application/x-www-form-urlencoded' };
  const unescape = (v: string) => v.replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');

  interface MfaPage {
    status: number;
    html: string;
    /** The CSRF cookie the page set (name=value). */
    csrfCookie: string;
    /** The TOTP form: its action and fields. */
    action: string;
    fields: Record<string, string>;
  }

  /** The MFA page a response is: its CSRF cookie and its TOTP form. */
  async function mfaPageOf(res: Response): Promise<MfaPage> {
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await res.text();
    const setCookie = res.headers.get('set-cookie') ?? '';
    // Only the CSRF cookie: no session before the second step.
    expect(setCookie).toMatch(/^__Host-secsvc_saml_csrf=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Strict; Secure; Max-Age=600$/);
    const totpForm = [...html.matchAll(/<form method="post" action="([^"]+)"[^>]*>([\s\S]*?)<\/form>/g)].find((m) => m[2]!.includes('name="mfa_type" value="totp"'));
    expect(totpForm).toBeDefined();
    const fields = Object.fromEntries([...totpForm![2]!.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((m) => [m[1]!, unescape(m[2]!)]));
    return { status: res.status, html, csrfCookie: setCookie.slice(0, setCookie.indexOf(';')), action: unescape(totpForm![1]!), fields };
  }

  /** The TOTP form posted with `code` (and the page's CSRF cookie unless `cookie` says otherwise). */
  const answer = (page: MfaPage, code: string, cookie: string | undefined = page.csrfCookie) =>
    fetch(`${url}${page.action}`, { method: 'POST', headers: { ...form, ...(cookie ? { cookie } : {}) }, body: new URLSearchParams({ ...page.fields, code }), redirect: 'manual' });

  const acs = (connectionId: string, samlResponse: string, relayState = '') =>
    fetch(`${url}/v1/sso/saml/${connectionId}/acs`, { method: 'POST', headers: form, body: new URLSearchParams({ SAMLResponse: samlResponse, RelayState: relayState }), redirect: 'manual' });

  it('is off by default, set at creation, changed by an update, and must be a boolean', async () => {
    const off = await connection();
    expect(off).toMatchObject({ requireMfa: false });
    const on = await connection({ requireMfa: true });
    expect(on).toMatchObject({ requireMfa: true });
    const patched = await fetch(`${url}/v1/sso/connections/${off.id}`, { method: 'PATCH', headers: auth, body: JSON.stringify({ requireMfa: true }) });
    expect(((await patched.json()) as { data: { requireMfa: boolean } }).data.requireMfa).toBe(true);
    const bad = await createConnection({ name: 'Bad', idpMetadataXml: idp.metadata(), domains: ['bad-mfa.example.com'], requireMfa: 'yes' });
    expect([bad.status, bad.body.error?.details[0]?.field]).toEqual([400, 'requireMfa']);
  });

  it('passes the AuthnContextClassRef and Microsoft\'s authnmethodsreferences to identity; an assertion that says MFA signs in at once', async () => {
    const c = await connection({ requireMfa: true, allowIdpInitiated: true });
    const refeds = await postAcs(c.id, idp.response(base(c, 'mfa@acme.example.com', { authnContextClassRef: 'https://refeds.org/profile/mfa' })));
    expect(refeds.status).toBe(200);
    expect(refeds.body.data).toMatchObject({ token: expect.stringMatching(/^ses_/) });
    expect(fake.logins.at(-1)!.authnContextClassRefs).toEqual(['https://refeds.org/profile/mfa']);
    const entra = await postAcs(
      c.id,
      idp.response(base(c, 'entra@acme.example.com', { attributes: { 'http://schemas.microsoft.com/claims/authnmethodsreferences': 'http://schemas.microsoft.com/claims/multipleauthn' } })),
    );
    expect(entra.status).toBe(200);
    expect(fake.logins.at(-1)!.authnContextClassRefs).toEqual([PASSWORD_CLASS, 'http://schemas.microsoft.com/claims/multipleauthn']);
  });

  it('IdP-initiated into the app: the MFA page (no session yet); a wrong code shows it again; the right one signs in and goes to the app', async () => {
    const c = await connection({ requireMfa: true, allowIdpInitiated: true, initiateLoginUrl: 'https://app.example.com/start' });
    const res = await acs(c.id, idp.response(base(c, 'second@acme.example.com')));
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('content-security-policy')).toMatch(/form-action 'self'/);
    expect(fake.logins.at(-1)!.authnContextClassRefs).toEqual([PASSWORD_CLASS]);
    const page = await mfaPageOf(res);
    expect(page.html).toContain('Two-step verification');
    // Every form of the page posts to this connection's /mfa, never to the OAuth endpoint.
    expect(page.html).not.toContain('/oauth/authorize');
    expect(page.action).toBe(`/v1/sso/saml/${c.id}/mfa`);
    expect(page.fields).toMatchObject({ mfa_token: expect.stringMatching(/^mft_/), mfa_type: 'totp', idp_initiated: '1', provisioned: '1', csrf_token: page.csrfCookie.split('=')[1] });

    // Without the CSRF cookie (a form posted from elsewhere): refused, nothing used up.
    const forged = await answer(page, FAKE_TOTP_CODE, '');
    expect(forged.status).toBe(403);
    expect(await answer(page, FAKE_TOTP_CODE, '__Host-secsvc_saml_csrf=' + 'x'.repeat(43))).toMatchObject({ status: 403 });
    expect(fake.mfaLogins).toHaveLength(0);

    const wrong = await answer(page, '000000');
    expect(wrong.status).toBe(401);
    const again = await mfaPageOf(wrong);
    expect(again.html).toContain('That code is not right');
    expect(again.fields.mfa_token).toBe(page.fields.mfa_token);
    const malformed = await answer(again, 'abc');
    expect(malformed.status).toBe(400);
    expect(await malformed.text()).toContain('Enter the 6-digit code');

    const ok = await answer(again, FAKE_TOTP_CODE);
    // On through a page (a meta refresh): the MFA form's CSP (form-action 'self') would block a redirect to the app.
    expect(ok.status).toBe(200);
    expect(await ok.text()).toContain(`url=https://app.example.com/start?iss=${encodeURIComponent(BASE)}`.replace(/&/g, '&amp;'));
    expect(ok.headers.get('set-cookie')).toMatch(/^secsvc_oauth_session=ses_token_\d+; Path=\/oauth; HttpOnly; SameSite=Lax; Secure; Max-Age=86400$/);
    expect(fake.mfaLogins.at(-1)).toMatchObject({ environment: 'live', mfaToken: page.fields.mfa_token, proof: { type: 'totp', code: FAKE_TOTP_CODE } });
    // The token works once.
    const reused = await answer(again, FAKE_TOTP_CODE);
    expect(reused.status).toBe(400);
    expect(((await reused.json()) as { error: { details: { field: string }[] } }).error.details[0]!.field).toBe('mfa_token');
  });

  it('a user without a factor gets the page telling them to ask an administrator, with no form to answer', async () => {
    const c = await connection({ requireMfa: true, allowIdpInitiated: true });
    const res = await acs(c.id, idp.response(base(c, 'nofactor@acme.example.com')));
    expect(res.status).toBe(200);
    expect(res.headers.get('set-cookie')).not.toMatch(/secsvc_oauth_session/);
    const html = await res.text();
    expect(html).toContain('Ask your administrator to set one up');
    expect(html).not.toContain('<form');
  });

  it('SP-initiated from the OAuth login page: after the continuation, the MFA page; then signed in there and back into the authorization request', async () => {
    const c = await connection({ requireMfa: true });
    const oauthQuery = 'client_id=cli_x&redirect_uri=https%3A%2F%2Fapp.example.com%2Fcb&state=s1';
    const start = await fetch(`${url}/v1/sso/saml/${c.id}/login?oauth=${encodeURIComponent(oauthQuery)}`, { redirect: 'manual' });
    const xml = inflateRawSync(Buffer.from(new URL(start.headers.get('location')!).searchParams.get('SAMLRequest')!, 'base64')).toString('utf8');
    const bindingCookie = start.headers.get('set-cookie')!.split(';')[0]!;
    const res = await acs(c.id, idp.response(base(c, 'oauth-mfa@acme.example.com', { inResponseTo: /ID="([^"]+)"/.exec(xml)![1]! })));
    const next = continuation(res)!;
    const page = await mfaPageOf(await fetch(`${url}${next}`, { headers: { cookie: bindingCookie }, redirect: 'manual' }));
    expect(page.status).toBe(200);
    expect(page.fields).toMatchObject({ return_to: oauthQuery });
    expect(page.fields.idp_initiated).toBeUndefined();
    const ok = await answer(page, FAKE_TOTP_CODE);
    // On through a page: the authorization endpoint's redirect to the client would be bound by the form's CSP.
    expect(ok.status).toBe(200);
    expect(await ok.text()).toContain(`url=${BASE}/oauth/authorize?${oauthQuery}`.replace(/&/g, '&amp;'));
    expect(ok.headers.get('set-cookie')).toMatch(/^secsvc_oauth_session=ses_token_\d+;/);
  });

  it('SP-initiated without the OAuth page: the JSON answer a login without the second step gets', async () => {
    const c = await connection({ requireMfa: true });
    const { requestId, cookie } = await login(c.id, 'relay-9');
    const res = await acs(c.id, idp.response(base(c, 'json-mfa@acme.example.com', { inResponseTo: requestId })), 'relay-9');
    const page = await mfaPageOf(await fetch(`${url}${continuation(res)!}`, { headers: { cookie }, redirect: 'manual' }));
    expect(page.fields).toMatchObject({ relay_state: 'relay-9' });
    const ok = await answer(page, FAKE_TOTP_CODE);
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { data: unknown }).data).toEqual({
      token: expect.stringMatching(/^ses_token_\d+$/),
      expiresAt: expect.any(String),
      userId: 'user_x',
      provisioned: true,
      connectionId: c.id,
      relayState: 'relay-9',
    });
  });
});

describe('IdP-initiated login into the app (initiateLoginUrl)', () => {
  it('signs the user in on the OAuth login page and sends the browser to the app with iss, no code or token', async () => {
    const c = await connection({ allowIdpInitiated: true, initiateLoginUrl: 'https://app.example.com/sso-start?tenant=7' });
    expect(c).toMatchObject({ initiateLoginUrl: 'https://app.example.com/sso-start?tenant=7' });
    const form = new URLSearchParams({ SAMLResponse: idp.response(base(c, 'tile@acme.example.com')) });
    const res = await fetch(`${url}/v1/sso/saml/${c.id}/acs`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: form, redirect: 'manual' });
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe(`https://app.example.com/sso-start?tenant=7&iss=${encodeURIComponent(BASE)}`);
    expect(res.headers.get('set-cookie')).toMatch(/^secsvc_oauth_session=ses_token_\d+; Path=\/oauth; HttpOnly; SameSite=Lax; Secure; Max-Age=86400$/);
    expect(fake.logins.at(-1)).toMatchObject({ connectionId: c.id, email: 'tile@acme.example.com' });
  });

  it('leaves SP-initiated logins alone, validates the URL and clears it with an empty string', async () => {
    const c = await connection({ initiateLoginUrl: 'https://app.example.com/start' });
    const { requestId, cookie } = await login(c.id);
    const out = await postAcs(c.id, idp.response(base(c, 'sp@acme.example.com', { inResponseTo: requestId })), 'r', cookie);
    expect(out.status).toBe(200);
    const bad = await createConnection({ name: 'Bad', idpMetadataXml: idp.metadata(), domains: ['bad-url.example.com'], initiateLoginUrl: 'javascript:alert(1)' });
    expect([bad.status, bad.body.error?.details[0]?.field]).toEqual([400, 'initiateLoginUrl']);
    const cleared = await fetch(`${url}/v1/sso/connections/${c.id}`, { method: 'PATCH', headers: auth, body: JSON.stringify({ initiateLoginUrl: '' }) });
    expect(((await cleared.json()) as { data: { initiateLoginUrl: string | null } }).data.initiateLoginUrl).toBeNull();
  });
});

describe('browser binding: an SP-initiated login finishes only in the browser that started it (login CSRF)', () => {
  const email = 'bob@acme.example.com';
  async function started(c: { id: string }, cookie?: string) {
    const l = await login(c.id, 'state-1', cookie);
    const res = await fetch(`${url}/v1/sso/saml/${c.id}/acs`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ SAMLResponse: idp.response(base(c, email, { inResponseTo: l.requestId })) }),
      redirect: 'manual',
    });
    // A validated response is not a login yet: no session, only a sealed state for the continuation.
    expect(res.status).toBe(303);
    expect(res.headers.get('set-cookie')).toBeNull();
    return { ...l, next: continuation(res)! };
  }

  async function expectMismatch(c: { id: string }, path: string, cookie: string | undefined, reason: string) {
    const [logins, failures] = [fake.logins.length, fake.failures.length];
    const out = await follow(path, cookie);
    expect([out.status, out.body.error?.details[0]]).toEqual([401, { field: 'SAMLResponse', message: reason }]);
    expect(fake.logins.length).toBe(logins);
    expect(fake.failures.slice(failures)).toEqual([expect.objectContaining({ connectionId: c.id, reason })]);
  }

  it('refuses the continuation in a browser without the cookie, or with another browser cookie', async () => {
    const c = await connection();
    const victim = await started(c);
    await expectMismatch(c, victim.next, undefined, 'browser_mismatch');
    const attacker = await login(c.id);
    await expectMismatch(c, victim.next, attacker.cookie, 'browser_mismatch');
    // A cookie without the __Host- prefix (what a sibling subdomain or a plain-http answer could plant) is
    // not read, even with the right nonce.
    await expectMismatch(c, victim.next, victim.cookie.replace(/^__Host-/, ''), 'browser_mismatch');
    // The rightful browser still finishes (the refusals used nothing up).
    expect((await follow(victim.next, victim.cookie)).status).toBe(200);
  });

  it('finishes once: the same continuation again is a replay', async () => {
    const c = await connection();
    const l = await started(c);
    expect((await follow(l.next, l.cookie)).status).toBe(200);
    const again = await follow(l.next, l.cookie);
    expect([again.status, again.body.error?.details[0]?.message]).toEqual([401, 'replayed_assertion']);
  });

  it('refuses a tampered state, a state for another connection, and none (400 naming state)', async () => {
    const c = await connection();
    const other = await connection();
    const l = await started(c);
    const state = l.next.slice(l.next.indexOf('state=') + 6);
    const flipped = state.slice(0, 30) + (state[30] === 'A' ? 'B' : 'A') + state.slice(31);
    await expectMismatch(c, `/v1/sso/saml/${c.id}/continue?state=${flipped}`, l.cookie, 'invalid_state');
    await expectMismatch(other, `/v1/sso/saml/${other.id}/continue?state=${state}`, l.cookie, 'invalid_state');
    const none = await follow(`/v1/sso/saml/${c.id}/continue`, l.cookie);
    expect([none.status, none.body.error?.details[0]?.field]).toEqual([400, 'state']);
  });

  it('keeps one nonce per browser, so logins started in two tabs both finish', async () => {
    const c = await connection();
    const first = await started(c);
    const second = await started(c, first.cookie);
    expect(second.cookie).toBe(first.cookie);
    expect((await follow(first.next, first.cookie)).status).toBe(200);
    expect((await follow(second.next, second.cookie)).status).toBe(200);
  });
});

describe('SP key rollover (SAML_SP_ROLLOVER_*)', () => {
  let next: { privateKey: string; certificate: string };
  let before: string;
  let after: string;
  beforeAll(async () => {
    next = await selfSignedCertificate('sp-next.example.com');
    // Before the switch: the next pair is published beside the active one. After: the roles are swapped.
    before = await startGateway({ ...sp, rollover: next });
    after = await startGateway({ ...next, rollover: sp });
  }, 30_000);

  const certs = (xml: string, use: string) =>
    [...xml.matchAll(new RegExp(`<KeyDescriptor use="${use}">[\\s\\S]*?<ds:X509Certificate>([^<]+)</ds:X509Certificate>`, 'g'))].map((m) => m[1]!.replace(/\s+/g, ''));
  const body = (pem: string) => pem.replace(/-----[A-Z ]+-----/g, '').replace(/\s+/g, '');

  it('publishes both certificates for signing and for encryption', async () => {
    const c = await connection();
    const xml = await (await fetch(`${before}/v1/sso/saml/${c.id}/metadata`)).text();
    expect(certs(xml, 'signing')).toEqual([body(sp.certificate), body(next.certificate)]);
    expect(certs(xml, 'encryption')).toEqual([body(sp.certificate), body(next.certificate)]);
    const single = await (await fetch(`${url}/v1/sso/saml/${c.id}/metadata`)).text();
    expect([certs(single, 'signing'), certs(single, 'encryption')]).toEqual([[body(sp.certificate)], [body(sp.certificate)]]);
  });

  it('signs AuthnRequests with the active key only', async () => {
    const c = await connection();
    for (const [gateway, signer, other] of [[before, sp, next], [after, next, sp]] as const) {
      const res = await fetch(`${gateway}/v1/sso/saml/${c.id}/login?relayState=r`, { redirect: 'manual' });
      const location = new URL(res.headers.get('location')!);
      const raw = location.search.slice(1).split('&');
      const signed = ['SAMLRequest', 'RelayState', 'SigAlg'].map((k) => raw.find((p) => p.startsWith(`${k}=`))!).join('&');
      const signature = location.searchParams.get('Signature')!;
      expect(createVerify('RSA-SHA256').update(signed).verify(signer.certificate, signature, 'base64')).toBe(true);
      expect(createVerify('RSA-SHA256').update(signed).verify(other.certificate, signature, 'base64')).toBe(false);
    }
  });

  it('decrypts assertions encrypted for either certificate, and refuses a third', async () => {
    const c = await connection({ allowIdpInitiated: true });
    const encryptedFor = async (certificate: string, email: string) => {
      const o = base(c, email);
      const now = new Date();
      const id = samlId();
      const signed = signAssertion(assertionXml(idp.entityId, o, id, now), id, idp.privateKey, idp.certificate);
      return Buffer.from(wrapResponse(idp.entityId, o, await encryptAssertion(signed, certificate), now)).toString('base64');
    };
    const acsAt = async (gateway: string, samlResponse: string) => {
      const res = await fetch(`${gateway}/v1/sso/saml/${c.id}/acs`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ SAMLResponse: samlResponse }) });
      return { status: res.status, body: (await res.json()) as Answer['body'] };
    };
    for (const gateway of [before, after]) {
      expect((await acsAt(gateway, await encryptedFor(sp.certificate, 'old@acme.example.com'))).status).toBe(200);
      expect((await acsAt(gateway, await encryptedFor(next.certificate, 'new@acme.example.com'))).status).toBe(200);
    }
    const stranger = await selfSignedCertificate('stranger.example.com');
    const refused = await acsAt(before, await encryptedFor(stranger.certificate, 'x@acme.example.com'));
    // Every decryption failure reads the same (no oracle on which step failed).
    expect([refused.status, refused.body.error?.details[0]?.message]).toEqual([401, 'decryption_failed']);
  });

  it('finishes a login validated just before the switch on a gateway that switched', async () => {
    const c = await connection();
    const l = await (async () => {
      const res = await fetch(`${before}/v1/sso/saml/${c.id}/login?relayState=r`, { redirect: 'manual' });
      const location = new URL(res.headers.get('location')!);
      const xml = inflateRawSync(Buffer.from(location.searchParams.get('SAMLRequest')!, 'base64')).toString('utf8');
      return { requestId: /ID="([^"]+)"/.exec(xml)![1]!, cookie: res.headers.get('set-cookie')!.split(';')[0]! };
    })();
    const res = await fetch(`${before}/v1/sso/saml/${c.id}/acs`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ SAMLResponse: idp.response(base(c, 'switch@acme.example.com', { inResponseTo: l.requestId })) }),
      redirect: 'manual',
    });
    const path = continuation(res)!;
    const done = await fetch(`${after}${path}`, { headers: { cookie: l.cookie } });
    expect(done.status).toBe(200);
  });
});

// Every combination: both bindings, requests and responses, on connections with either setting.
describe.each([false, true])('single logout from the IdP (/slo), allowIdpInitiated: %s', (allowIdpInitiated) => {
  let c: { id: string; sp: Record<string, string>; idp?: Record<string, unknown> };
  const nameId = 'slo@acme.example.com';
  beforeAll(async () => {
    c = await connection({ allowIdpInitiated });
  });
  const sloUrl = () => spUrls(BASE, c.id).sloUrl;
  const redirectLogout = (query: string) => fetch(`${url}/v1/sso/saml/${c.id}/slo?${query}`, { redirect: 'manual' });
  const postLogout = (samlRequest: string, connectionId = c.id) =>
    fetch(`${url}/v1/sso/saml/${connectionId}/slo`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ SAMLRequest: samlRequest, RelayState: 'rs' }), redirect: 'manual' });

  /** The LogoutResponse the IdP gets back: signed by the SP over the query, Success, answering `requestId`. */
  function expectLogoutResponse(res: Response, requestId: string) {
    expect(res.status).toBe(302);
    const location = new URL(res.headers.get('location')!);
    expect(`${location.origin}${location.pathname}`).toBe(idp.sloUrl);
    const raw = location.search.slice(1).split('&');
    const pick = (k: string) => raw.find((p) => p.startsWith(`${k}=`));
    const signed = [pick('SAMLResponse'), pick('RelayState'), pick('SigAlg')].filter(Boolean).join('&');
    expect(createVerify('RSA-SHA256').update(signed).verify(sp.certificate, location.searchParams.get('Signature')!, 'base64')).toBe(true);
    const xml = inflateRawSync(Buffer.from(location.searchParams.get('SAMLResponse')!, 'base64')).toString('utf8');
    expect(xml).toContain(`InResponseTo="${requestId}"`);
    expect(xml).toContain('urn:oasis:names:tc:SAML:2.0:status:Success');
    expect(xml).toContain(`Destination="${idp.sloUrl}"`);
    return location;
  }

  async function expectRefusedLogout(res: Response, reason: RegExp) {
    const logouts = fake.logouts.length;
    expect(res.status).toBe(401);
    const body = (await res.json()) as Answer['body'];
    expect(body.error!.details[0]!.field).toBe('SAMLRequest');
    expect(body.error!.details[0]!.message).toMatch(reason);
    expect(fake.logouts.length).toBe(logouts);
  }

  it('publishes the SP logout service (both bindings) and reads the IdP one', async () => {
    const xml = await (await fetch(`${url}/v1/sso/saml/${c.id}/metadata`)).text();
    expect(xml).toContain(`<SingleLogoutService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="${sloUrl()}"/>`);
    expect(xml).toContain(`<SingleLogoutService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="${sloUrl()}"/>`);
    const got = (await (await fetch(`${url}/v1/sso/connections/${c.id}`, { headers: auth })).json()) as { data: { idp: { sloUrl?: string }; sp: { sloUrl: string } } };
    expect(got.data.idp.sloUrl).toBe(idp.sloUrl);
    expect(got.data.sp.sloUrl).toBe(sloUrl());
  });

  it('ends the sessions of a signed HTTP-Redirect LogoutRequest and answers with a signed LogoutResponse', async () => {
    const id = samlId();
    const res = await redirectLogout(idp.logoutRequest({ binding: 'redirect', destination: sloUrl(), nameId, sessionIndexes: ['_idx1'], id, relayState: 'back' }));
    const location = expectLogoutResponse(res, id);
    expect(location.searchParams.get('RelayState')).toBe('back');
    expect(fake.logouts.at(-1)).toMatchObject({ connectionId: c.id, nameId, sessionIndexes: ['_idx1'], requestId: id });
    expect(Date.parse(fake.logouts.at(-1)!.requestExpiresAt!)).toBeGreaterThan(Date.now());
  });

  it('ends the sessions of a signed HTTP-POST LogoutRequest (every session of the NameID without SessionIndex)', async () => {
    const id = samlId();
    expectLogoutResponse(await postLogout(idp.logoutRequest({ binding: 'post', destination: sloUrl(), nameId, id })), id);
    expect(fake.logouts.at(-1)).toMatchObject({ nameId, sessionIndexes: [], requestId: id });
  });

  it('answers 200 with the count when the IdP metadata names no logout service', async () => {
    const quiet = (await createConnection({ name: 'No SLO', idpMetadataXml: idp.metadata({ noLogout: true }), domains: ['quiet.example.com'] })).body.data!;
    const res = await postLogout(idp.logoutRequest({ binding: 'post', destination: spUrls(BASE, quiet.id).sloUrl, nameId }), quiet.id);
    expect(res.status).toBe(200);
    expect(((await res.json()) as { data: { revoked: number } }).data).toEqual({ revoked: 0 });
  });

  it('refuses unsigned or foreign-signed requests in both bindings', async () => {
    for (const sign of ['none', 'other'] as const) {
      await expectRefusedLogout(await redirectLogout(idp.logoutRequest({ binding: 'redirect', destination: sloUrl(), nameId, sign })), sign === 'none' ? /unsigned_request/ : /Invalid query signature/);
      await expectRefusedLogout(await postLogout(idp.logoutRequest({ binding: 'post', destination: sloUrl(), nameId, sign })), /Invalid signature/);
    }
  });

  it('refuses another destination or issuer, stale, future and expired requests, SHA-1, extra parameters, DTDs', async () => {
    const ok = { binding: 'redirect' as const, destination: sloUrl(), nameId };
    await expectRefusedLogout(await redirectLogout(idp.logoutRequest({ ...ok, destination: 'https://evil.example.org/slo' })), /wrong_destination/);
    await expectRefusedLogout(await redirectLogout(idp.logoutRequest({ ...ok, issuer: 'https://evil.example.org' })), /issuer/i);
    await expectRefusedLogout(await redirectLogout(idp.logoutRequest({ ...ok, issueInstant: new Date(Date.now() - 20 * 60_000) })), /request_expired/);
    await expectRefusedLogout(await redirectLogout(idp.logoutRequest({ ...ok, issueInstant: new Date(Date.now() + 10 * 60_000) })), /request_not_yet_valid/);
    await expectRefusedLogout(await redirectLogout(idp.logoutRequest({ ...ok, notOnOrAfter: new Date(Date.now() - 5 * 60_000) })), /request_expired/);
    await expectRefusedLogout(await redirectLogout(idp.logoutRequest({ ...ok, sigAlg: 'http://www.w3.org/2000/09/xmldsig#rsa-sha1' })), /^sha1_refused/);
    await expectRefusedLogout(await redirectLogout(idp.logoutRequest({ ...ok, sigAlg: 'http://www.w3.org/2000/09/xmldsig#dsa-sha256' })), /unsupported_signature_algorithm/);
    await expectRefusedLogout(await redirectLogout(idp.logoutRequest(ok) + '&extra=1'), /unexpected_parameters/);
    const withDtd = `<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]>` + Buffer.from(idp.logoutRequest({ ...ok, binding: 'post' }), 'base64').toString('utf8');
    await expectRefusedLogout(await postLogout(Buffer.from(withDtd).toString('base64')), /dtd_refused/);
  });

  it('refuses a replayed LogoutRequest; names a missing SAMLRequest (400)', async () => {
    const query = idp.logoutRequest({ binding: 'redirect', destination: sloUrl(), nameId });
    expect((await redirectLogout(query)).status).toBe(302);
    const again = await redirectLogout(query);
    expect(again.status).toBe(401);
    expect(((await again.json()) as Answer['body']).error!.details[0]).toEqual({ field: 'SAMLRequest', message: 'replayed_request' });
    const none = await fetch(`${url}/v1/sso/saml/${c.id}/slo`, { redirect: 'manual' });
    expect([none.status, ((await none.json()) as Answer['body']).error!.details[0]!.field]).toEqual([400, 'SAMLRequest']);
  });
});

describe.each([false, true])('SP-initiated single logout (POST /v1/sso/logout, then the LogoutResponse at /slo), allowIdpInitiated: %s', (allowIdpInitiated) => {
  let c: { id: string; sp: Record<string, string> };
  beforeAll(async () => {
    c = await connection({ allowIdpInitiated });
  });
  const sloUrl = () => spUrls(BASE, c.id).sloUrl;

  /** A SAML session for `email` (IdP-initiated login where allowed, else SP-initiated): its token and SessionIndex. */
  async function samlSession(email: string) {
    const assertionId = samlId();
    let out: Answer;
    if (allowIdpInitiated) out = await postAcs(c.id, idp.response(base(c, email, { assertionId })));
    else {
      const started = await login(c.id);
      out = await postAcs(c.id, idp.response(base(c, email, { assertionId, inResponseTo: started.requestId })), undefined, started.cookie);
    }
    expect(out.status).toBe(200);
    return { token: out.body.data!.token, sessionIndex: assertionId };
  }
  const logout = async (body: Record<string, unknown>) => {
    const res = await fetch(`${url}/v1/sso/logout`, { method: 'POST', headers: auth, body: JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as { data?: { revoked: boolean; logoutUrl: string | null }; error?: { details: { field: string }[] } } };
  };
  /** The LogoutRequest in a logoutUrl: checked (signed by the SP, to the IdP's SLO, naming the subject) and its id. */
  function logoutRequestOf(logoutUrl: string, email: string, sessionIndex: string): string {
    const location = new URL(logoutUrl);
    expect(`${location.origin}${location.pathname}`).toBe(idp.sloUrl);
    const raw = location.search.slice(1).split('&');
    const signed = ['SAMLRequest', 'RelayState', 'SigAlg'].map((k) => raw.find((p) => p.startsWith(`${k}=`))).filter(Boolean).join('&');
    expect(createVerify('RSA-SHA256').update(signed).verify(sp.certificate, location.searchParams.get('Signature')!, 'base64')).toBe(true);
    const xml = inflateRawSync(Buffer.from(location.searchParams.get('SAMLRequest')!, 'base64')).toString('utf8');
    expect(xml).toContain(`Destination="${idp.sloUrl}"`);
    expect(xml).toContain(`>${email}</saml:NameID>`);
    expect(xml).toContain(`>${sessionIndex}</saml2p:SessionIndex>`);
    expect(xml).toContain(`<saml:Issuer xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion">${c.sp.entityId}</saml:Issuer>`);
    return /ID="([^"]+)"/.exec(xml)![1]!;
  }
  const answer = (query: string) => fetch(`${url}/v1/sso/saml/${c.id}/slo?${query}`, { redirect: 'manual' });
  const postAnswer = (samlResponse: string) =>
    fetch(`${url}/v1/sso/saml/${c.id}/slo`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ SAMLResponse: samlResponse }), redirect: 'manual' });
  async function expectRefusedAnswer(res: Response, reason: RegExp) {
    expect(res.status).toBe(401);
    const detail = ((await res.json()) as Answer['body']).error!.details[0]!;
    expect(detail.field).toBe('SAMLResponse');
    expect(detail.message).toMatch(reason);
  }

  it('ends the session, hands out a signed LogoutRequest for the IdP, and sends the browser on after its answer', async () => {
    const email = 'leaver@acme.example.com';
    const s = await samlSession(email);
    const out = await logout({ token: s.token, returnTo: 'https://app.example.com/signed-out' });
    expect(out.status).toBe(200);
    expect(out.body.data!.revoked).toBe(true);
    const id = logoutRequestOf(out.body.data!.logoutUrl!, email, s.sessionIndex);
    expect(fake.requests.get(`logout:${id}`)).toMatchObject({ connectionId: c.id, returnTo: 'https://app.example.com/signed-out' });
    // A forged answer (another key) neither passes nor uses the request up.
    await expectRefusedAnswer(await answer(idp.logoutResponse({ binding: 'redirect', destination: sloUrl(), inResponseTo: id, sign: 'other' })), /Invalid query signature/);
    const done = await answer(idp.logoutResponse({ binding: 'redirect', destination: sloUrl(), inResponseTo: id }));
    expect([done.status, done.headers.get('location')]).toEqual([303, 'https://app.example.com/signed-out']);
    // Once only.
    await expectRefusedAnswer(await answer(idp.logoutResponse({ binding: 'redirect', destination: sloUrl(), inResponseTo: id })), /unknown_request/);
    // The same token again: already ended, nothing to log out of.
    expect((await logout({ token: s.token })).body.data).toEqual({ revoked: false, logoutUrl: null });
  });

  it('takes the answer over HTTP-POST too, and answers JSON without a returnTo', async () => {
    const s = await samlSession('poster@acme.example.com');
    const id = logoutRequestOf((await logout({ token: s.token })).body.data!.logoutUrl!, 'poster@acme.example.com', s.sessionIndex);
    await expectRefusedAnswer(await postAnswer(idp.logoutResponse({ binding: 'post', destination: sloUrl(), inResponseTo: id, sign: 'none' })), /Invalid signature/);
    const done = await postAnswer(idp.logoutResponse({ binding: 'post', destination: sloUrl(), inResponseTo: id }));
    expect(done.status).toBe(200);
    expect(((await done.json()) as { data: unknown }).data).toEqual({ loggedOut: true });
  });

  it('refuses an unsigned, failed, misaddressed or foreign-issued answer, and one to an AuthnRequest', async () => {
    const s = await samlSession('picky@acme.example.com');
    const id = logoutRequestOf((await logout({ token: s.token })).body.data!.logoutUrl!, 'picky@acme.example.com', s.sessionIndex);
    const ok = { binding: 'redirect' as const, destination: sloUrl(), inResponseTo: id };
    await expectRefusedAnswer(await answer(idp.logoutResponse({ ...ok, sign: 'none' })), /unsigned_request/);
    await expectRefusedAnswer(await answer(idp.logoutResponse({ ...ok, status: 'urn:oasis:names:tc:SAML:2.0:status:Responder' })), /logout_failed: Responder/);
    await expectRefusedAnswer(await answer(idp.logoutResponse({ ...ok, destination: 'https://evil.example.org/slo' })), /wrong_destination/);
    await expectRefusedAnswer(await answer(idp.logoutResponse({ ...ok, issuer: 'https://evil.example.org' })), /wrong_issuer/);
    const { requestId } = await login(c.id);
    await expectRefusedAnswer(await answer(idp.logoutResponse({ ...ok, inResponseTo: requestId })), /unknown_request/);
    // The AuthnRequest was not used up by it, nor the LogoutRequest by the refusals.
    expect(fake.requests.has(requestId)).toBe(true);
    expect((await answer(idp.logoutResponse(ok))).status).toBe(200);
  });

  it('has no logout URL for a session that no SAML login opened; names faulty fields', async () => {
    expect((await logout({ token: 'ses_not_a_saml_session' })).body.data).toEqual({ revoked: false, logoutUrl: null });
    const missing = await logout({});
    expect([missing.status, missing.body.error!.details[0]!.field]).toEqual([400, 'token']);
    const bad = await logout({ token: 'x', returnTo: 'javascript:alert(1)' });
    expect([bad.status, bad.body.error!.details[0]!.field]).toEqual([400, 'returnTo']);
  });
});

describe('attacks on the ACS, each refused (401, SAMLResponse named, user.login failure recorded)', () => {
  let c: { id: string; sp: Record<string, string> };
  beforeAll(async () => {
    c = await connection({ allowIdpInitiated: true });
  });
  const email = 'eve@acme.example.com';

  it('unsigned assertion', async () => {
    await expectRefused(c.id, idp.response(base(c, email, { sign: 'none' })), /Invalid signature/);
  });

  it('assertion signed by another key than the IdP certificate', async () => {
    await expectRefused(c.id, idp.response(base(c, email, { sign: 'other' })), /Invalid signature/);
  });

  it('signature wrapping: a forged assertion beside the genuinely signed one', async () => {
    const now = new Date();
    const o = base(c, 'victim@acme.example.com');
    const id = samlId();
    const signed = signAssertion(assertionXml(idp.entityId, o, id, now), id, idp.privateKey, idp.certificate);
    const forged = assertionXml(idp.entityId, { ...o, email: 'admin@acme.example.com' }, samlId(), now);
    await expectRefused(c.id, Buffer.from(wrapResponse(idp.entityId, o, forged + signed, now)).toString('base64'), /Invalid signature/);
    // The forged one carrying the signed one inside it (same id, signature still valid over the inner copy).
    const forgedSameId = assertionXml(idp.entityId, { ...o, email: 'admin@acme.example.com' }, id, now).replace('</saml:Subject>', `</saml:Subject><saml:Advice>${signed}</saml:Advice>`);
    await expectRefused(c.id, Buffer.from(wrapResponse(idp.entityId, o, forgedSameId, now)).toString('base64'), /Invalid signature/);
  });

  it('a signature over the whole Response is enough; by another key, or with a forged assertion beside it, it is not', async () => {
    const ok = await postAcs(c.id, idp.response(base(c, 'resp@acme.example.com', { sign: 'response' })));
    expect(ok.status).toBe(200);
    expect(fake.logins.at(-1)).toMatchObject({ email: 'resp@acme.example.com' });
    await expectRefused(c.id, idp.response(base(c, email, { sign: 'response-other' })), /Invalid signature/);
    // A second (unsigned) assertion slipped into the signed Response after signing.
    const signed = Buffer.from(idp.response(base(c, 'resp2@acme.example.com', { sign: 'response' })), 'base64').toString('utf8');
    const forged = assertionXml(idp.entityId, base(c, 'admin@acme.example.com'), samlId(), new Date());
    const wrapped = signed.replace('</samlp:Response>', `${forged}</samlp:Response>`);
    await expectRefused(c.id, Buffer.from(wrapped).toString('base64'), /Invalid signature|multiple assertions/);
    // Or the signed assertion replaced by a forged one (the signature no longer matches).
    const swapped = signed.replace(/<saml:Assertion [\s\S]*<\/saml:Assertion>/, forged);
    await expectRefused(c.id, Buffer.from(swapped).toString('base64'), /Invalid signature/);
  });

  it('comment in the NameID (the signature does not see comments)', async () => {
    await expectRefused(c.id, idp.response(base(c, email, { rawNameId: 'admin@acme.example.com<!---->.evil.example.org' })), /comment_refused/);
  });

  it('wrong audience', async () => {
    await expectRefused(c.id, idp.response(base(c, email, { audience: 'https://other-sp.example.com/metadata' })), /audience mismatch/);
  });

  it('expired assertion (past NotOnOrAfter beyond the skew)', async () => {
    const past = new Date(Date.now() - 10 * 60_000);
    await expectRefused(c.id, idp.response(base(c, email, { notBefore: new Date(past.getTime() - 60_000), notOnOrAfter: past })), /expired/);
  });

  it('assertion not yet valid (NotBefore in the future beyond the skew)', async () => {
    const later = new Date(Date.now() + 10 * 60_000);
    await expectRefused(c.id, idp.response(base(c, email, { notBefore: later, notOnOrAfter: new Date(later.getTime() + 60_000) })), /not yet valid/);
  });

  it('replayed assertion', async () => {
    const response = idp.response(base(c, email));
    expect((await postAcs(c.id, response)).status).toBe(200);
    const again = await postAcs(c.id, response);
    expect(again.status).toBe(401);
    expect(again.body.error!.details[0]!.message).toBe('replayed_assertion');
    expect(fake.failures.at(-1)).toMatchObject({ reason: 'replayed_assertion' });
  });

  it('DTD / external entity', async () => {
    const xml = Buffer.from(idp.response(base(c, email)), 'base64').toString('utf8');
    const withDtd = `<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]>${xml}`;
    await expectRefused(c.id, Buffer.from(withDtd).toString('base64'), /dtd_refused/);
  });

  it('wrong Destination and wrong Recipient', async () => {
    await expectRefused(c.id, idp.response(base(c, email, { destination: 'https://evil.example.org/acs' })), /wrong_destination/);
    await expectRefused(c.id, idp.response(base(c, email, { recipient: 'https://evil.example.org/acs' })), /wrong_recipient/);
  });

  it('another issuer than the connection IdP', async () => {
    await expectRefused(c.id, idp.response(base(c, email, { issuer: 'https://evil.example.org' })), /wrong_issuer/);
  });

  it('SP-initiated only (the default): no InResponseTo, an unknown one, or one issued for another connection', async () => {
    const strict = await connection();
    const mail = 'ada@acme.example.com';
    await expectRefused(strict.id, idp.response(base(strict, mail)), /InResponseTo is missing/);
    await expectRefused(strict.id, idp.response(base(strict, mail, { inResponseTo: '_never-sent' })), /InResponseTo is not valid/);
    const other = await connection();
    const { requestId } = await login(other.id);
    await expectRefused(strict.id, idp.response(base(strict, mail, { inResponseTo: requestId })), /InResponseTo is not valid/);
  });

  it('a forged response naming a pending request does not use the request up', async () => {
    const strict = await connection();
    const { requestId, cookie } = await login(strict.id);
    await expectRefused(strict.id, idp.response(base(strict, 'ada@acme.example.com', { inResponseTo: requestId, sign: 'other' })), /Invalid signature/);
    await expectRefused(strict.id, idp.response(base(strict, 'ada@acme.example.com', { inResponseTo: requestId, sign: 'none' })), /Invalid signature/);
    expect(fake.requests.has(requestId)).toBe(true);
    expect((await postAcs(strict.id, idp.response(base(strict, 'ada@acme.example.com', { inResponseTo: requestId })), 'r', cookie)).status).toBe(200);
  });

  it('a missing SAMLResponse is a 400 naming it', async () => {
    const res = await fetch(`${url}/v1/sso/saml/${c.id}/acs`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'RelayState=x' });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { details: { field: string }[] } }).error.details[0]!.field).toBe('SAMLResponse');
  });
});

describe('encryption and signature algorithms of real IdPs', () => {
  const XENC = 'http://www.w3.org/2001/04/xmlenc#';
  const XENC11 = 'http://www.w3.org/2009/xmlenc11#';
  let c: { id: string; sp: Record<string, string> };
  beforeAll(async () => {
    c = await connection({ allowIdpInitiated: true });
  });

  /** A response whose signed assertion xml-encryption encrypted for the SP; `signResponse`: the Response signed too, over the ciphertext. */
  async function encrypted(email: string, o: EncryptionOptions, extra: { signResponse?: boolean; sha1?: boolean; connectionId?: string } = {}) {
    const r = base({ id: extra.connectionId ?? c.id }, email);
    const now = new Date();
    const id = samlId();
    const signed = signAssertion(assertionXml(idp.entityId, r, id, now), id, idp.privateKey, idp.certificate, extra.sha1);
    let xml = wrapResponse(idp.entityId, r, await encryptAssertion(signed, sp.certificate, o), now);
    if (extra.signResponse) xml = signRoot(xml, /^<samlp:Response [^>]*ID="([^"]+)"/.exec(xml)![1]!, idp.privateKey, idp.certificate);
    return Buffer.from(xml).toString('base64');
  }

  it('decrypts every RSA-OAEP key transport, OAEP digest and MGF1 digest with AES-GCM content (Keycloak: xmlenc11#rsa-oaep, SHA-256)', async () => {
    const combos: EncryptionOptions[] = [];
    for (const digest of ['sha1', 'sha256', 'sha512']) {
      for (const content of [`${XENC11}aes128-gcm`, `${XENC11}aes256-gcm`]) {
        combos.push({ keyTransport: `${XENC}rsa-oaep-mgf1p`, digest, content });
        for (const mgf of ['sha1', 'sha256', 'sha512']) combos.push({ keyTransport: `${XENC11}rsa-oaep`, digest, mgf, content });
      }
    }
    for (const [i, o] of combos.entries()) {
      const out = await postAcs(c.id, await encrypted(`combo${i}@acme.example.com`, o));
      expect([JSON.stringify(o), out.status]).toEqual([JSON.stringify(o), 200]);
      expect(fake.logins.at(-1)).toMatchObject({ email: `combo${i}@acme.example.com` });
    }
  });

  it('refuses rsa-1_5 key transport (Bleichenbacher)', async () => {
    await expectRefused(c.id, await encrypted('old@acme.example.com', { keyTransport: `${XENC}rsa-1_5` }), /^key_transport_refused: rsa-1_5/);
  });

  it('decrypts AES-CBC content only inside a signed Response (the signature covers the ciphertext: no padding oracle)', async () => {
    for (const content of [`${XENC}aes128-cbc`, `${XENC}aes256-cbc`]) {
      await expectRefused(c.id, await encrypted('cbc@acme.example.com', { content }), /^cbc_needs_signed_response/);
      const out = await postAcs(c.id, await encrypted('cbc@acme.example.com', { content, keyTransport: `${XENC11}rsa-oaep`, digest: 'sha256' }, { signResponse: true }));
      expect(out.status).toBe(200);
      expect(fake.logins.at(-1)).toMatchObject({ email: 'cbc@acme.example.com' });
    }
  });

  it('refuses SHA-1 signatures on the Response, the assertion and the encrypted assertion, unless the connection allows them (logged at each use)', async () => {
    await expectRefused(c.id, idp.response(base(c, 'sha1@acme.example.com', { sha1: true })), /^sha1_refused/);
    await expectRefused(c.id, idp.response(base(c, 'sha1@acme.example.com', { sha1: true, sign: 'response' })), /^sha1_refused/);
    await expectRefused(c.id, await encrypted('sha1@acme.example.com', { keyTransport: `${XENC11}rsa-oaep`, digest: 'sha256' }, { sha1: true }), /^sha1_refused/);

    const legacy = await connection({ allowIdpInitiated: true, allowSha1Signatures: true });
    expect(legacy).toMatchObject({ allowSha1Signatures: true });
    expect(c).toMatchObject({ allowSha1Signatures: false });
    const warn = jest.spyOn(logger, 'warn');
    try {
      expect((await postAcs(legacy.id, idp.response(base(legacy, 'legacy@acme.example.com', { sha1: true })))).status).toBe(200);
      expect((await postAcs(legacy.id, await encrypted('legacy@acme.example.com', {}, { sha1: true, connectionId: legacy.id }))).status).toBe(200);
      const uses = warn.mock.calls.filter(([fields]) => (fields as { connectionId?: string }).connectionId === legacy.id);
      expect(uses.map(([fields]) => (fields as { message: string }).message)).toEqual(['Response', 'encrypted Assertion']);
    } finally {
      warn.mockRestore();
    }
    // Turned off again: refused again.
    const res = await fetch(`${url}/v1/sso/connections/${legacy.id}`, { method: 'PATCH', headers: auth, body: JSON.stringify({ allowSha1Signatures: false }) });
    expect(((await res.json()) as { data: { allowSha1Signatures: boolean } }).data.allowSha1Signatures).toBe(false);
    await expectRefused(legacy.id, idp.response(base(legacy, 'legacy@acme.example.com', { sha1: true })), /^sha1_refused/);
  });

  it('refuses SHA-1 on logout messages in both bindings unless allowed', async () => {
    const nameId = 'sha1-logout@acme.example.com';
    const slo = (id: string, init?: RequestInit & { query?: string }) =>
      fetch(`${url}/v1/sso/saml/${id}/slo${init?.query ? `?${init.query}` : ''}`, { redirect: 'manual', ...init });
    const post = (id: string, samlRequest: string) =>
      slo(id, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ SAMLRequest: samlRequest }) });
    const destination = (id: string) => spUrls(BASE, id).sloUrl;
    const refused = async (res: Response) => {
      expect(res.status).toBe(401);
      expect(((await res.json()) as Answer['body']).error!.details[0]!.message).toMatch(/^sha1_refused/);
    };
    await refused(await post(c.id, idp.logoutRequest({ binding: 'post', destination: destination(c.id), nameId, sha1: true })));
    await refused(await slo(c.id, { query: idp.logoutRequest({ binding: 'redirect', destination: destination(c.id), nameId, sha1: true }) }));
    const legacy = await connection({ allowSha1Signatures: true });
    expect((await post(legacy.id, idp.logoutRequest({ binding: 'post', destination: destination(legacy.id), nameId, sha1: true }))).status).toBe(302);
    expect((await slo(legacy.id, { query: idp.logoutRequest({ binding: 'redirect', destination: destination(legacy.id), nameId, sha1: true }) })).status).toBe(302);
  });

  it('advertises in SP metadata the key transports and content algorithms it decrypts, and not rsa-1_5', async () => {
    const xml = await (await fetch(`${url}/v1/sso/saml/${c.id}/metadata`)).text();
    const doc = new DOMParser().parseFromString(xml, 'text/xml');
    const methods = Array.from(doc.getElementsByTagNameNS('urn:oasis:names:tc:SAML:2.0:metadata', 'EncryptionMethod')).map((e) => e.getAttribute('Algorithm'));
    expect(methods).toEqual([
      `${XENC11}aes256-gcm`,
      `${XENC11}aes192-gcm`,
      `${XENC11}aes128-gcm`,
      `${XENC}aes256-cbc`,
      `${XENC}aes192-cbc`,
      `${XENC}aes128-cbc`,
      `${XENC11}rsa-oaep`,
      `${XENC11}rsa-oaep`,
      `${XENC}rsa-oaep-mgf1p`,
    ]);
    expect(xml).not.toContain('rsa-1_5');
    // Still signed by the SP over the whole document.
    const signature = doc.getElementsByTagNameNS('http://www.w3.org/2000/09/xmldsig#', 'Signature')[0]!;
    const check = new SignedXml({ publicCert: sp.certificate });
    check.loadSignature(signature);
    expect(check.checkSignature(xml)).toBe(true);
  });
});
