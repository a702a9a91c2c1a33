/** SSO connections and the identity side of SAML logins (with the MFA a connection may require) against a real PostgreSQL. */
import { Metadata } from '@grpc/grpc-js';
import { AppError, type CallContext, type Pool } from '@secsvc/shared';
import type { IdentityConfig } from '../src/config';
import type { IdentityContext } from '../src/context';
import { ACR_MFA, ACR_SINGLE_FACTOR } from '../src/domain/mfa';
import { base32Decode, hotp, timeStep, TOTP_PERIOD } from '../src/domain/totp';
import { closeIdentityTestDb, identityTestDb, type IdentityTestDb } from './support/db';
import { identityRpc } from './support/rpc';
import type { IdentityRpc } from '../src/rpc';

const config = { SERVER_SECRET: 'q'.repeat(40), ISSUER: 'https://auth.example.com', WEBAUTHN_RP_NAME: 'Security Service' } as IdentityConfig;

let t: IdentityTestDb;
let pool: Pool;
let ctx: IdentityContext;
let rpc: IdentityRpc;

const call = (): CallContext => {
  const metadata = new Metadata();
  metadata.set('x-client-ip', '203.0.113.9');
  metadata.set('x-user-agent', 'jest');
  return { requestId: 'req_ssotests0000000000', metadata };
};

beforeAll(async () => {
  t = await identityTestDb(config);
  ({ pool, ctx } = t);
  rpc = identityRpc(ctx);
});

afterAll(() => closeIdentityTestDb(t));

const events = async (type: string) => (await pool.query(`SELECT payload FROM outbox WHERE event_type = $1 ORDER BY seq`, [type])).rows.map((r) => r.payload);

let n = 0;
function fields(over: Record<string, unknown> = {}) {
  n++;
  return {
    name: `Acme ${n}`,
    idpMetadataXml: '<EntityDescriptor/>',
    idpEntityId: `https://idp${n}.example.com`,
    idpSsoUrl: `https://idp${n}.example.com/sso`,
    idpCertificates: ['-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----'],
    domains: [`acme${n}.example.com`],
    defaultRoles: ['role_reader'],
    attributeMappingJson: '{"email":"mail"}',
    allowIdpInitiated: false,
    initiateLoginUrl: '',
    allowSha1Signatures: false,
    requireMfa: false,
    ...over,
  };
}

async function rejects(p: Promise<unknown>, code: string, field?: string): Promise<AppError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AppError);
  expect((err as AppError).code).toBe(code);
  if (field) expect((err as AppError).details.map((d) => d.field)).toContain(field);
  return err as AppError;
}

describe('SSO connections', () => {
  it('creates, reads, lists, updates and deletes a connection, with an event each', async () => {
    const created = await rpc.createSsoConnection({ environment: 'live', fields: fields() }, call());
    expect(created.id).toMatch(/^sso_/);
    expect(JSON.parse(created.attributeMappingJson)).toEqual({ email: 'mail' });
    expect(await rpc.getSsoConnection({ environment: 'live', id: created.id, anyEnvironment: false })).toEqual(created);
    // The SP endpoints find it by id alone; the other environment does not see it.
    expect((await rpc.getSsoConnection({ environment: '', id: created.id, anyEnvironment: true })).id).toBe(created.id);
    await rejects(rpc.getSsoConnection({ environment: 'test', id: created.id, anyEnvironment: false }), 'not_found');

    const page = await rpc.listSsoConnections({ environment: 'live', limit: 100, cursor: '' });
    expect(page.connections.map((c) => c.id)).toContain(created.id);

    const updated = await rpc.updateSsoConnection(
      { environment: 'live', id: created.id, name: 'Renamed', allowIdpInitiated: true, initiateLoginUrl: 'https://app.example.com/login', domains: { values: ['renamed.example.com'] }, idpCertificates: undefined, defaultRoles: undefined },
      call(),
    );
    expect(updated).toMatchObject({ name: 'Renamed', allowIdpInitiated: true, initiateLoginUrl: 'https://app.example.com/login', domains: ['renamed.example.com'], idpEntityId: created.idpEntityId });
    // An empty string clears it; absent leaves it.
    expect((await rpc.updateSsoConnection({ environment: 'live', id: created.id, name: 'Again', idpCertificates: undefined, domains: undefined, defaultRoles: undefined }, call())).initiateLoginUrl).toBe('https://app.example.com/login');
    expect((await rpc.updateSsoConnection({ environment: 'live', id: created.id, initiateLoginUrl: '', idpCertificates: undefined, domains: undefined, defaultRoles: undefined }, call())).initiateLoginUrl).toBe('');
    // SHA-1 signatures: off unless opted in, kept by updates that do not name it.
    expect(created.allowSha1Signatures).toBe(false);
    expect((await rpc.updateSsoConnection({ environment: 'live', id: created.id, allowSha1Signatures: true, idpCertificates: undefined, domains: undefined, defaultRoles: undefined }, call())).allowSha1Signatures).toBe(true);
    expect((await rpc.updateSsoConnection({ environment: 'live', id: created.id, name: 'Kept', idpCertificates: undefined, domains: undefined, defaultRoles: undefined }, call())).allowSha1Signatures).toBe(true);
    expect((await rpc.getSsoConnection({ environment: 'live', id: created.id, anyEnvironment: false })).allowSha1Signatures).toBe(true);

    await rpc.deleteSsoConnection({ environment: 'live', id: created.id }, call());
    await rejects(rpc.getSsoConnection({ environment: 'live', id: created.id, anyEnvironment: false }), 'not_found');
    for (const type of ['sso_connection.created', 'sso_connection.updated', 'sso_connection.deleted']) {
      expect((await events(type)).at(-1)).toMatchObject({ target: { id: created.id, type: 'sso_connection' }, result: 'success' });
    }
  });

  it('names the faulty field: domains, defaultRoles, attributeMapping, name', async () => {
    await rejects(rpc.createSsoConnection({ environment: 'live', fields: fields({ domains: ['Not A Domain'] }) }, call()), 'invalid_request', 'domains[0]');
    await rejects(rpc.createSsoConnection({ environment: 'live', fields: fields({ domains: [] }) }, call()), 'invalid_request', 'domains');
    await rejects(rpc.createSsoConnection({ environment: 'live', fields: fields({ defaultRoles: ['admin'] }) }, call()), 'invalid_request', 'defaultRoles[0]');
    await rejects(rpc.createSsoConnection({ environment: 'live', fields: fields({ attributeMappingJson: '{"email":1}' }) }, call()), 'invalid_request', 'attributeMapping.email');
    await rejects(rpc.createSsoConnection({ environment: 'live', fields: fields({ name: '  ' }) }, call()), 'invalid_request', 'name');
    await rejects(rpc.createSsoConnection({ environment: 'live', fields: fields({ initiateLoginUrl: 'javascript:alert(1)' }) }, call()), 'invalid_request', 'initiateLoginUrl');
  });

  it('finds the connection of an email domain in the environment', async () => {
    const c = await rpc.createSsoConnection({ environment: 'live', fields: fields({ domains: ['found.example.com', 'also.example.com'] }) }, call());
    expect((await rpc.findSsoConnection({ environment: 'live', domain: 'ALSO.example.com' })).id).toBe(c.id);
    await rejects(rpc.findSsoConnection({ environment: 'test', domain: 'found.example.com' }), 'not_found');
    await rejects(rpc.findSsoConnection({ environment: 'live', domain: 'example.com' }), 'not_found');
  });

  it('refuses a domain that another connection of the environment already has (409 naming domains)', async () => {
    const a = await rpc.createSsoConnection({ environment: 'live', fields: fields({ domains: ['shared.example.com'] }) }, call());
    await rejects(rpc.createSsoConnection({ environment: 'live', fields: fields({ domains: ['shared.example.com'] }) }, call()), 'conflict', 'domains');
    // Another environment may route the same domain; the connection itself may keep it.
    await rpc.createSsoConnection({ environment: 'test', fields: fields({ domains: ['shared.example.com'] }) }, call());
    await rpc.updateSsoConnection({ environment: 'live', id: a.id, domains: { values: ['shared.example.com', 'more.example.com'] }, idpCertificates: undefined, defaultRoles: undefined }, call());
  });
});

describe('SAML logins (identity side)', () => {
  const expiry = () => new Date(Date.now() + 5 * 60_000).toISOString();

  it('creates the user just in time (emailVerified, defaultRoles), opens a session and records user.login with the connection', async () => {
    const c = await rpc.createSsoConnection({ environment: 'live', fields: fields({ defaultRoles: ['role_engineer'] }) }, call());
    const email = `jit@${c.domains[0]}`;
    const out = await rpc.completeSamlLogin(
      { connectionId: c.id, assertionId: '_a1', assertionExpiresAt: expiry(), nameId: email, email, name: 'Jit User', ip: '203.0.113.9', userAgent: 'jest', expiresInSeconds: 0, sessionIndex: '', nameIdFormat: '', authnContextClassRefs: [] },
      call(),
    );
    expect(out.provisioned).toBe(true);
    const verified = await rpc.verifySession({ environment: 'live', token: out.session!.token });
    expect(verified.valid).toBe(true);
    expect(verified.user).toMatchObject({ id: out.userId, email, emailVerified: true, roles: ['role_engineer'], name: 'Jit User' });
    const login = (await events('user.login')).at(-1);
    expect(login).toMatchObject({ actor: { id: out.userId, email }, target: { type: 'session' }, result: 'success' });
    expect(JSON.parse(login.metadataJson)).toMatchObject({ authMethod: 'saml', connectionId: c.id, provisioned: true });
    expect((await events('user.created')).at(-1)).toMatchObject({ target: { id: out.userId } });

    // Second login of the same person (another assertion): the same user, not provisioned again.
    const again = await rpc.completeSamlLogin(
      { connectionId: c.id, assertionId: '_a2', assertionExpiresAt: expiry(), nameId: email, email: email.toUpperCase(), name: '', ip: '', userAgent: '', expiresInSeconds: 3600, sessionIndex: '', nameIdFormat: '', authnContextClassRefs: [] },
      call(),
    );
    expect(again).toMatchObject({ userId: out.userId, provisioned: false });
  });

  it('logs an existing user in by email', async () => {
    const c = await rpc.createSsoConnection({ environment: 'live', fields: fields() }, call());
    const u = await rpc.createUser({ environment: 'live', email: `ada@${c.domains[0]}`, name: 'Ada', roles: ['role_admin'], metadataJson: '' }, call());
    const out = await rpc.completeSamlLogin(
      { connectionId: c.id, assertionId: '_b1', assertionExpiresAt: expiry(), nameId: u.email, email: u.email, name: 'Other Name', ip: '', userAgent: '', expiresInSeconds: 0, sessionIndex: '', nameIdFormat: '', authnContextClassRefs: [] },
      call(),
    );
    expect(out).toMatchObject({ userId: u.id, provisioned: false });
  });

  it('refuses a replayed assertion id and records the failure', async () => {
    const c = await rpc.createSsoConnection({ environment: 'live', fields: fields() }, call());
    const email = `replay@${c.domains[0]}`;
    const req = { connectionId: c.id, assertionId: '_replayed', assertionExpiresAt: expiry(), nameId: email, email, name: '', ip: '', userAgent: '', expiresInSeconds: 0, sessionIndex: '', nameIdFormat: '', authnContextClassRefs: [] };
    await rpc.completeSamlLogin(req, call());
    await rejects(rpc.completeSamlLogin(req, call()), 'unauthorized', 'SAMLResponse');
    const failure = (await events('user.login')).at(-1);
    expect(failure).toMatchObject({ result: 'failure' });
    expect(JSON.parse(failure.metadataJson)).toMatchObject({ authMethod: 'saml', connectionId: c.id, reason: 'replayed_assertion' });
  });

  it('refuses an email outside the connection domains (an IdP cannot speak for another organisation)', async () => {
    const c = await rpc.createSsoConnection({ environment: 'live', fields: fields() }, call());
    const req = { connectionId: c.id, assertionId: '_other', assertionExpiresAt: expiry(), nameId: 'x', email: 'admin@elsewhere.example.org', name: '', ip: '', userAgent: '', expiresInSeconds: 0, sessionIndex: '', nameIdFormat: '', authnContextClassRefs: [] };
    await rejects(rpc.completeSamlLogin(req, call()), 'unauthorized');
    expect(JSON.parse((await events('user.login')).at(-1).metadataJson)).toMatchObject({ reason: 'domain_not_allowed' });
  });

  it('remembers AuthnRequest ids once, and records refused responses', async () => {
    const c = await rpc.createSsoConnection({ environment: 'live', fields: fields() }, call());
    const binding = 'b'.repeat(43);
    await rpc.saveSamlRequest({ connectionId: c.id, requestId: '_req1', ttlSeconds: 300, returnTo: 'client_id=cli_x&state=s', binding });
    expect(await rpc.takeSamlRequest({ requestId: '_req1' })).toEqual({ found: true, connectionId: c.id, returnTo: 'client_id=cli_x&state=s', binding });
    expect(await rpc.takeSamlRequest({ requestId: '_req1' })).toEqual({ found: false, connectionId: '', returnTo: '', binding: '' });
    await rejects(rpc.saveSamlRequest({ connectionId: c.id, requestId: '_req2', ttlSeconds: 0, returnTo: '', binding: '' }), 'invalid_request', 'ttlSeconds');
    await rejects(rpc.saveSamlRequest({ connectionId: c.id, requestId: '_req3', ttlSeconds: 60, returnTo: 'x'.repeat(4097), binding: '' }), 'invalid_request', 'returnTo');
    await rejects(rpc.saveSamlRequest({ connectionId: c.id, requestId: '_req4', ttlSeconds: 60, returnTo: '', binding: 'not a digest' }), 'invalid_request', 'binding');

    await rpc.reportSamlLoginFailure({ connectionId: c.id, reason: 'invalid_signature', email: 'not an email', ip: '203.0.113.9', userAgent: 'jest' }, call());
    const failure = (await events('user.login')).at(-1);
    expect(failure).toMatchObject({ result: 'failure', actor: { type: 'anonymous' } });
    expect(JSON.parse(failure.metadataJson)).toMatchObject({ authMethod: 'saml', connectionId: c.id, reason: 'invalid_signature' });
  });
});

describe('single logout (identity side)', () => {
  const soon = () => new Date(Date.now() + 5 * 60_000).toISOString();
  let k = 0;
  async function samlLogin(connectionId: string, email: string, sessionIndex: string) {
    k++;
    const req = { connectionId, assertionId: `_slo${k}`, assertionExpiresAt: soon(), nameId: email, email, name: '', ip: '', userAgent: '', expiresInSeconds: 0, sessionIndex, nameIdFormat: 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress', authnContextClassRefs: [] };
    return rpc.completeSamlLogin(req, call());
  }
  const end = (connectionId: string, nameId: string, sessionIndexes: string[], requestId = `_lr${++k}`) =>
    rpc.endSamlSessions({ connectionId, nameId, sessionIndexes, requestId, requestExpiresAt: soon(), ip: '203.0.113.9', userAgent: 'idp' }, call());
  const valid = async (token: string) => (await rpc.verifySession({ environment: 'live', token })).valid;

  it('ends the sessions of one SessionIndex, then every session of the NameID, with user.logout each', async () => {
    const c = await rpc.createSsoConnection({ environment: 'live', fields: fields() }, call());
    const other = await rpc.createSsoConnection({ environment: 'live', fields: fields() }, call());
    const email = `slo@${c.domains[0]}`;
    const a = await samlLogin(c.id, email, 'idx-a');
    const b = await samlLogin(c.id, email, 'idx-b');
    const bystander = await samlLogin(c.id, `other@${c.domains[0]}`, 'idx-a');
    // The same NameID through another connection is another IdP's subject: untouched.
    const elsewhere = await samlLogin(other.id, `slo@${other.domains[0]}`, 'idx-a');
    // A session of the same user opened otherwise (API, password) is not the IdP's to end either.
    const local = await rpc.createSession({ environment: 'live', userId: a.userId, expiresInSeconds: 3600, metadataJson: '' }, call());

    expect(await end(c.id, email, ['idx-a'])).toEqual({ revoked: 1 });
    expect([await valid(a.session!.token), await valid(b.session!.token), await valid(bystander.session!.token), await valid(elsewhere.session!.token)]).toEqual([false, true, true, true]);
    const logout = (await events('user.logout')).at(-1);
    expect(logout).toMatchObject({ actor: { id: a.userId, type: 'user' }, target: { id: a.session!.session!.id, type: 'session' }, result: 'success' });
    expect(JSON.parse(logout.metadataJson)).toMatchObject({ authMethod: 'saml', connectionId: c.id, singleLogout: 'idp' });

    expect(await end(c.id, email, [])).toEqual({ revoked: 1 });
    expect(await valid(b.session!.token)).toBe(false);
    expect(await valid(local.token)).toBe(true);
    expect(await end(c.id, email, [])).toEqual({ revoked: 0 });
  });

  it('tells who a revoked session belonged to at the IdP (SP-initiated single logout), and nothing for other sessions', async () => {
    const c = await rpc.createSsoConnection({ environment: 'live', fields: fields() }, call());
    const email = `sp-slo@${c.domains[0]}`;
    const a = await samlLogin(c.id, email, 'idx-sp');
    expect(await rpc.revokeSession({ environment: 'live', token: a.session!.token }, call())).toEqual({
      revoked: true,
      saml: { connectionId: c.id, nameId: email, nameIdFormat: 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress', sessionIndex: 'idx-sp' },
    });
    expect(await rpc.revokeSession({ environment: 'live', token: a.session!.token }, call())).toEqual({ revoked: false, saml: undefined });
    const local = await rpc.createSession({ environment: 'live', userId: a.userId, expiresInSeconds: 3600, metadataJson: '' }, call());
    expect(await rpc.revokeSession({ environment: 'live', token: local.token }, call())).toEqual({ revoked: true, saml: undefined });
  });

  it('refuses a replayed LogoutRequest id and bad fields', async () => {
    const c = await rpc.createSsoConnection({ environment: 'live', fields: fields() }, call());
    await end(c.id, 'x@y', [], '_once');
    await rejects(end(c.id, 'x@y', [], '_once'), 'unauthorized', 'SAMLRequest');
    await rejects(end(c.id, '', []), 'invalid_request', 'nameId');
    await rejects(end(c.id, 'x@y', ['']), 'invalid_request', 'sessionIndexes');
    await rejects(end(c.id, 'x@y', [], ''), 'invalid_request', 'requestId');
  });
});

describe('SAML logins through a connection that requires MFA (requireMfa)', () => {
  const soon = () => new Date(Date.now() + 5 * 60_000).toISOString();
  const EMAIL_FORMAT = 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress';
  const PASSWORD_CLASS = 'urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport';
  const REFEDS_MFA = 'https://refeds.org/profile/mfa';
  const MS_MFA = 'http://schemas.microsoft.com/claims/multipleauthn';
  let a = 0;
  const assertion = (connectionId: string, email: string, classRefs: string[]) => {
    a++;
    return {
      connectionId,
      assertionId: `_mfa${a}`,
      assertionExpiresAt: soon(),
      nameId: email,
      email,
      name: '',
      ip: '203.0.113.7',
      userAgent: 'browser',
      expiresInSeconds: 0,
      sessionIndex: `idx-mfa-${a}`,
      nameIdFormat: EMAIL_FORMAT,
      authnContextClassRefs: classRefs,
    };
  };
  const sessionRow = async (id: string) =>
    (await pool.query<{ amr: string[]; acr: string; mfa_at: Date | null; metadata: string }>('SELECT amr, acr, mfa_at, metadata::text AS metadata FROM sessions WHERE id = $1', [id])).rows[0]!;
  const samlSession = async (id: string) => (await pool.query('SELECT connection_id, name_id, name_id_format, session_index FROM saml_sessions WHERE session_id = $1', [id])).rows[0];
  /** The user.login events about `id` (a user or a session), oldest first. */
  const logins = async (id: string) =>
    (await pool.query(`SELECT payload FROM outbox WHERE event_type = 'user.login' AND payload::text LIKE $1 ORDER BY seq`, [`%${id}%`])).rows.map((r) => ({
      ...r.payload,
      metadata: JSON.parse(r.payload.metadataJson),
    }));
  const sessionsOf = async (userId: string) => Number((await pool.query('SELECT count(*) AS n FROM sessions WHERE user_id = $1', [userId])).rows[0].n);

  const totp = (secret: string, offset = 0) => hotp(base32Decode(secret), timeStep(Date.now()) + offset);
  /** A confirmed TOTP factor (confirmed with the previous step's code, so the current one is left for the login). */
  async function withTotp(userId: string) {
    const left = TOTP_PERIOD * 1000 - (Date.now() % (TOTP_PERIOD * 1000));
    if (left < 5000) await new Promise((r) => setTimeout(r, left + 50));
    const e = await rpc.enrollTotp({ environment: 'live', userId, name: '' });
    await rpc.confirmTotp({ environment: 'live', userId, factorId: e.factor!.id, code: totp(e.secret, -1), ip: '203.0.113.50' }, call());
    return e.secret;
  }

  it('is off by default, set at creation, changed only by an update that names it, and in every answer', async () => {
    const off = await rpc.createSsoConnection({ environment: 'live', fields: fields() }, call());
    expect(off.requireMfa).toBe(false);
    const on = await rpc.createSsoConnection({ environment: 'live', fields: fields({ requireMfa: true }) }, call());
    expect(on.requireMfa).toBe(true);
    expect((await rpc.getSsoConnection({ environment: 'live', id: on.id, anyEnvironment: false })).requireMfa).toBe(true);
    const listed = (await rpc.listSsoConnections({ environment: 'live', limit: 100, cursor: '' })).connections;
    expect(listed.find((c) => c.id === on.id)?.requireMfa).toBe(true);
    expect(listed.find((c) => c.id === off.id)?.requireMfa).toBe(false);
    const updated = await rpc.updateSsoConnection({ environment: 'live', id: off.id, requireMfa: true, idpCertificates: undefined, domains: undefined, defaultRoles: undefined }, call());
    expect(updated.requireMfa).toBe(true);
    expect(JSON.parse((await events('sso_connection.updated')).at(-1).metadataJson)).toMatchObject({ changed: ['requireMfa'] });
    expect((await rpc.updateSsoConnection({ environment: 'live', id: off.id, name: 'Kept', idpCertificates: undefined, domains: undefined, defaultRoles: undefined }, call())).requireMfa).toBe(true);
    expect((await rpc.updateSsoConnection({ environment: 'live', id: off.id, requireMfa: false, idpCertificates: undefined, domains: undefined, defaultRoles: undefined }, call())).requireMfa).toBe(false);
  });

  it('without it: a session either way, amr fed, plus mfa (acr mfa, mfaAt) when the assertion says the IdP did MFA', async () => {
    const c = await rpc.createSsoConnection({ environment: 'live', fields: fields() }, call());
    const email = `plain@${c.domains[0]}`;
    const single = await rpc.completeSamlLogin(assertion(c.id, email, [PASSWORD_CLASS]), call());
    expect(single.mfa).toBeUndefined();
    expect(single.session!.session).toMatchObject({ amr: ['fed'], acr: ACR_SINGLE_FACTOR, mfaAt: undefined });
    expect(await sessionRow(single.session!.session!.id)).toMatchObject({ amr: ['fed'], acr: ACR_SINGLE_FACTOR, mfa_at: null });
    expect((await logins(single.session!.session!.id))[0]!.metadata).toEqual({ authMethod: 'saml', connectionId: c.id, mfaUsed: false, provisioned: true, amr: ['fed'] });

    const multi = await rpc.completeSamlLogin(assertion(c.id, email, [PASSWORD_CLASS, REFEDS_MFA]), call());
    expect(multi.session!.session).toMatchObject({ amr: ['fed', 'mfa'], acr: ACR_MFA, mfaAt: expect.any(String) });
    const row = await sessionRow(multi.session!.session!.id);
    expect(row).toMatchObject({ amr: ['fed', 'mfa'], acr: ACR_MFA });
    expect(row.mfa_at).toBeInstanceOf(Date);
    expect((await logins(multi.session!.session!.id))[0]!.metadata).toEqual({ authMethod: 'saml', connectionId: c.id, mfaUsed: true, mfaBy: 'idp', provisioned: false, amr: ['fed', 'mfa'] });
    // Its SAML subject is recorded at once, as before.
    expect(await samlSession(multi.session!.session!.id)).toMatchObject({ connection_id: c.id, name_id: email });
  });

  it('with it: an assertion that says MFA (REFEDS MFA, Microsoft multipleauthn) opens the session directly', async () => {
    const c = await rpc.createSsoConnection({ environment: 'live', fields: fields({ requireMfa: true }) }, call());
    for (const ref of [REFEDS_MFA, MS_MFA]) {
      const out = await rpc.completeSamlLogin(assertion(c.id, `direct@${c.domains[0]}`, [PASSWORD_CLASS, ref]), call());
      expect(out.mfa).toBeUndefined();
      expect(out.session!.session).toMatchObject({ amr: ['fed', 'mfa'], acr: ACR_MFA });
    }
  });

  it('with it and no MFA asserted: the user is provisioned and the assertion used, but the answer is a challenge, even without a factor (none can be enrolled in it)', async () => {
    const c = await rpc.createSsoConnection({ environment: 'live', fields: fields({ requireMfa: true }) }, call());
    const email = `nofactor@${c.domains[0]}`;
    const req = assertion(c.id, email, [PASSWORD_CLASS]);
    const out = await rpc.completeSamlLogin(req, call());
    expect(out.session).toBeUndefined();
    expect(out).toMatchObject({ provisioned: true, mfa: { factors: [], enrollmentRequired: false, passkeyOptionsJson: '' } });
    expect(out.mfa!.mfaToken).toMatch(/^mft_/);
    expect((await events('user.created')).at(-1)).toMatchObject({ target: { id: out.userId } });
    // No session and no user.login yet; the assertion cannot be used again.
    expect(await sessionsOf(out.userId)).toBe(0);
    expect(await logins(out.userId)).toEqual([]);
    await rejects(rpc.completeSamlLogin(req, call()), 'unauthorized', 'SAMLResponse');
    // The user cannot give themselves a factor with the IdP's single factor alone.
    const enroll = await rejects(rpc.enrollTotpForLogin({ environment: 'live', mfaToken: out.mfa!.mfaToken, name: '' }), 'conflict');
    expect(enroll.details.map((d) => d.field)).toEqual(['mfaToken']);
    expect((await rpc.listMfaFactors({ environment: 'live', userId: out.userId })).factors).toEqual([]);
    await rejects(rpc.completeMfaLogin({ environment: 'live', mfaToken: out.mfa!.mfaToken, proof: { type: 'totp', code: '123456', credentialJson: '' }, ip: '203.0.113.7', userAgent: 'browser' }, call()), 'unauthorized');
    expect(await sessionsOf(out.userId)).toBe(0);
  });

  it("with it and no MFA asserted: the user's TOTP opens the session as the SAML login would (metadata, single logout, user.login with mfaUsed)", async () => {
    const c = await rpc.createSsoConnection({ environment: 'live', fields: fields({ requireMfa: true }) }, call());
    const u = await rpc.createUser({ environment: 'live', email: `totp@${c.domains[0]}`, name: 'T', roles: [], metadataJson: '' }, call());
    const secret = await withTotp(u.id);
    const req = assertion(c.id, u.email, [PASSWORD_CLASS]);
    const out = await rpc.completeSamlLogin(req, call());
    expect(out).toMatchObject({ userId: u.id, provisioned: false, mfa: { enrollmentRequired: false, factors: [{ type: 'totp', confirmed: true }] } });
    expect(out.session).toBeUndefined();

    const wrong = await rejects(rpc.completeMfaLogin({ environment: 'live', mfaToken: out.mfa!.mfaToken, proof: { type: 'totp', code: totp(secret, 50), credentialJson: '' }, ip: '203.0.113.7', userAgent: 'browser' }, call()), 'unauthorized');
    expect(wrong.details.map((d) => d.field)).toEqual(['code']);
    const created = await rpc.completeMfaLogin(
      { environment: 'live', mfaToken: out.mfa!.mfaToken, proof: { type: 'totp', code: totp(secret), credentialJson: '' }, ip: '203.0.113.8', userAgent: 'browser' },
      call(),
    );
    const id = created.session!.id;
    expect(created.session).toMatchObject({ userId: u.id, amr: ['fed', 'otp', 'mfa'], acr: ACR_MFA, mfaAt: expect.any(String) });
    // The metadata a SAML session has (the browser of the ACS), its subject for single logout, and user.login.
    expect(JSON.parse((await sessionRow(id)).metadata)).toEqual({ ip: '203.0.113.7', userAgent: 'browser', authMethod: 'saml', connectionId: c.id });
    expect(await samlSession(id)).toEqual({ connection_id: c.id, name_id: u.email, name_id_format: EMAIL_FORMAT, session_index: req.sessionIndex });
    const [login] = await logins(id);
    expect(login).toMatchObject({ actor: { id: u.id, type: 'user' }, target: { id, type: 'session' }, result: 'success' });
    expect(login!.metadata).toMatchObject({ authMethod: 'saml', connectionId: c.id, provisioned: false, mfaUsed: true, mfaFactor: 'totp', amr: ['fed', 'otp', 'mfa'] });
    expect((await rpc.verifySession({ environment: 'live', token: created.token })).valid).toBe(true);
    // The IdP's single logout reaches the session.
    expect(await rpc.endSamlSessions({ connectionId: c.id, nameId: u.email, sessionIndexes: [req.sessionIndex], requestId: `_lr-mfa-${a}`, requestExpiresAt: soon(), ip: '', userAgent: '' }, call())).toEqual({
      revoked: 1,
    });
    expect((await rpc.verifySession({ environment: 'live', token: created.token })).valid).toBe(false);

    // The requirement is the connection's: without it, the same user's SAML login needs no second step.
    await rpc.updateSsoConnection({ environment: 'live', id: c.id, requireMfa: false, idpCertificates: undefined, domains: undefined, defaultRoles: undefined }, call());
    const direct = await rpc.completeSamlLogin(assertion(c.id, u.email, [PASSWORD_CLASS]), call());
    expect(direct.session!.session).toMatchObject({ amr: ['fed'], acr: ACR_SINGLE_FACTOR });
  });
});
