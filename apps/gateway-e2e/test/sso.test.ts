/**
 * SAML SSO end to end through the local stack (gateway, identity on Postgres, outbox, audit): a connection
 * made through the API, SP-initiated login with a test IdP (key and certificate made now), the ACS creating
 * the user just in time, the session usable, the response refused a second time (request id used up; and
 * for an IdP-initiated response, the assertion id remembered), and the logins in the audit log.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { inflateRawSync } from 'node:zlib';
import { selfSignedCertificate, startTestIdp, type TestIdp } from '../../gateway/test/support/saml-idp';
import { eventually, startTestStack, type Api } from './support';

jest.setTimeout(120_000);

const KEY = 'svc_sk_' + 'ssoE2eTestsKey'.repeat(3);

let api: Api;
let baseUrl: string;
let stop: (() => Promise<void>) | undefined;
let keysDir: string;
let idp: TestIdp;

beforeAll(async () => {
  idp = await startTestIdp('corp');
  const sp = await selfSignedCertificate('secsvc-sp.test');
  keysDir = await mkdtemp(path.join(os.tmpdir(), 'secsvc-sso-keys-'));
  await writeFile(path.join(keysDir, 'sp.key'), sp.privateKey, { mode: 0o600 });
  await writeFile(path.join(keysDir, 'sp.crt'), sp.certificate);
  const started = await startTestStack('sso', KEY, { SAML_SP_KEY_FILE: path.join(keysDir, 'sp.key'), SAML_SP_CERT_FILE: path.join(keysDir, 'sp.crt') });
  ({ api, stop } = started);
  baseUrl = started.stack.baseUrl;
});

afterAll(async () => {
  await stop?.();
  if (keysDir) await rm(keysDir, { recursive: true, force: true });
});

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- JSON bodies, asserted field by field
type Json = any;

/**
 * The IdP's POST to the ACS (cross-site: no cookie), then, for a login a browser started, each browser in
 * `cookies` (its binding cookie, or undefined for one without) following the 303 to the continuation where
 * the login completes. The last answer is returned; `refused` gets the earlier ones.
 */
async function acs(connectionId: string, samlResponse: string, cookies: (string | undefined)[] = [], refused: Json[] = []): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${baseUrl}/sso/saml/${connectionId}/acs`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ SAMLResponse: samlResponse, RelayState: 'e2e' }),
    redirect: 'manual',
  });
  if (res.status !== 303) return { status: res.status, body: await res.json() };
  let last: { status: number; body: Json } | undefined;
  for (const cookie of cookies) {
    if (last) refused.push(last);
    const next = await fetch(res.headers.get('location')!, { redirect: 'manual', headers: cookie ? { cookie } : {} });
    last = { status: next.status, body: await next.json() };
  }
  return last!;
}

describe('SAML SSO through the stack', () => {
  it('logs a new user in just in time, refuses the replay, and records both in the audit log', async () => {
    const created = await api('POST', '/sso/connections', { name: 'Corp', idpMetadataXml: idp.metadata(), domains: ['corp.example.com'], defaultRoles: ['role_viewer'] });
    expect(created.status).toBe(201);
    const c = created.body.data;
    expect(c.sp.acsUrl).toBe(`${baseUrl}/sso/saml/${c.id}/acs`);
    expect((await api('POST', '/sso/connections', { name: 'Bad', idpMetadataXml: idp.metadata({ noCertificate: true }), domains: ['bad.example.com'] })).body.error.details[0].field).toBe('idpMetadataXml');

    const metadata = await fetch(`${baseUrl}/sso/saml/${c.id}/metadata`);
    expect(await metadata.text()).toContain(`Location="${c.sp.acsUrl}"`);

    const redirect = await fetch(`${baseUrl}/sso/saml/${c.id}/login?relayState=e2e`, { redirect: 'manual' });
    expect(redirect.status).toBe(302);
    const location = new URL(redirect.headers.get('location')!);
    expect(location.searchParams.get('Signature')).toBeTruthy();
    const requestId = /ID="([^"]+)"/.exec(inflateRawSync(Buffer.from(location.searchParams.get('SAMLRequest')!, 'base64')).toString('utf8'))![1]!;
    const browser = redirect.headers.get('set-cookie')!.split(';')[0]!;

    const response = idp.response({ acsUrl: c.sp.acsUrl, audience: c.sp.entityId, email: 'Grace@corp.example.com', inResponseTo: requestId, attributes: {} });
    // Followed first in another browser (no nonce cookie): login CSRF, refused; then in the right one.
    const csrf: Json[] = [];
    const ok = await acs(c.id, response, [undefined, browser], csrf);
    expect(csrf.map((r) => [r.status, r.body.error.details[0]])).toEqual([[401, { field: 'SAMLResponse', message: 'browser_mismatch' }]]);
    expect(ok.status).toBe(200);
    expect(ok.body.data).toMatchObject({ provisioned: true, relayState: 'e2e', connectionId: c.id });

    const verified = await api('POST', '/sessions/verify', { token: ok.body.data.token });
    expect(verified.body.data).toMatchObject({ valid: true, user: { id: ok.body.data.userId, emailVerified: true, roles: ['role_viewer'] } });

    // The same response again: its AuthnRequest id is used up.
    const again = await acs(c.id, response, [browser]);
    expect(again.status).toBe(401);
    expect(again.body.error.details[0]).toEqual({ field: 'SAMLResponse', message: 'invalid_response: InResponseTo is not valid' });

    // IdP-initiated (once allowed): the assertion id alone stops a replay, remembered in Postgres.
    expect((await api('PATCH', `/sso/connections/${c.id}`, { allowIdpInitiated: true })).body.data.allowIdpInitiated).toBe(true);
    const unsolicited = idp.response({ acsUrl: c.sp.acsUrl, audience: c.sp.entityId, email: 'grace@corp.example.com' });
    const second = await acs(c.id, unsolicited);
    expect(second.status).toBe(200);
    expect(second.body.data).toMatchObject({ userId: ok.body.data.userId, provisioned: false });
    const replay = await acs(c.id, unsolicited);
    expect(replay.status).toBe(401);
    expect(replay.body.error.details[0]).toEqual({ field: 'SAMLResponse', message: 'replayed_assertion' });

    const logins = await eventually(
      async () => (await api('GET', '/logs?limit=100&events=user.login')).body.data as Json[],
      // Three refusals: the continuation in another browser, the reused request id, the replayed assertion.
      (es) => es.filter((e) => e.result === 'success' && e.actor?.id === ok.body.data.userId).length >= 2 && es.filter((e) => e.result === 'failure').length >= 3,
    );
    const success = await api('GET', `/logs/${logins.find((e) => e.result === 'success' && e.actor?.id === ok.body.data.userId).id}`);
    expect(success.body.data.metadata).toMatchObject({ authMethod: 'saml', connectionId: c.id });
    const failures = await Promise.all(logins.filter((e) => e.result === 'failure').map(async (e) => (await api('GET', `/logs/${e.id}`)).body.data.metadata));
    expect(failures).toContainEqual(expect.objectContaining({ authMethod: 'saml', connectionId: c.id, reason: 'replayed_assertion' }));

    // Single logout from the IdP (HTTP-Redirect, signed): the session of that NameID ends at once (identity
    // revokes it in Postgres; the gateway's verify cache hears of it), the other NameID's session stays.
    const logout = await fetch(`${c.sp.sloUrl}?${idp.logoutRequest({ binding: 'redirect', destination: c.sp.sloUrl, nameId: 'Grace@corp.example.com' })}`, { redirect: 'manual' });
    expect(logout.status).toBe(302);
    expect(logout.headers.get('location')!.startsWith(`${idp.sloUrl}?SAMLResponse=`)).toBe(true);
    await eventually(
      async () => (await api('POST', '/sessions/verify', { token: ok.body.data.token })).body.data.valid,
      (valid) => valid === false,
    );
    expect((await api('POST', '/sessions/verify', { token: second.body.data.token })).body.data.valid).toBe(true);
    const logouts = await eventually(
      async () => (await api('GET', '/logs?limit=100&events=user.logout')).body.data as Json[],
      (es) => es.length >= 1,
    );
    expect((await api('GET', `/logs/${logouts[0].id}`)).body.data.metadata).toMatchObject({ authMethod: 'saml', connectionId: c.id, singleLogout: 'idp' });

    // SP-initiated single logout: the app ends the other session and sends the browser to the IdP; the IdP's
    // signed answer comes back to /slo and the browser goes on to the app.
    const started = await api('POST', '/sso/logout', { token: second.body.data.token, returnTo: 'https://app.corp.example.com/bye' });
    expect(started.body.data.revoked).toBe(true);
    const logoutUrl = new URL(started.body.data.logoutUrl);
    expect(`${logoutUrl.origin}${logoutUrl.pathname}`).toBe(idp.sloUrl);
    const logoutRequestId = /ID="([^"]+)"/.exec(inflateRawSync(Buffer.from(logoutUrl.searchParams.get('SAMLRequest')!, 'base64')).toString('utf8'))![1]!;
    const back = await fetch(`${c.sp.sloUrl}?${idp.logoutResponse({ binding: 'redirect', destination: c.sp.sloUrl, inResponseTo: logoutRequestId })}`, { redirect: 'manual' });
    expect([back.status, back.headers.get('location')]).toEqual([303, 'https://app.corp.example.com/bye']);
    expect((await api('POST', '/sessions/verify', { token: second.body.data.token })).body.data.valid).toBe(false);
  });
});
