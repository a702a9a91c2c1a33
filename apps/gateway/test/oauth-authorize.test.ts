/**
 * The authorization endpoint's pages over HTTP with a fake identity service: the login's second step (MFA),
 * passwordless passkey logins, the step-up that acr_values=urn:secsvc:acr:mfa asks for, and the passkey script.
 */
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import vm from 'node:vm';
import express from 'express';
import type { identity } from '@secsvc/proto';
import { AppError, createLogger } from '@secsvc/shared';
import type { OAuthDeps } from '../src/oauth/deps';
import { oauthRouter } from '../src/oauth';
import { SIGN_IN_EXPIRED } from '../src/oauth/authorize';
import { PASSKEY_SCRIPT } from '../src/oauth/passkey-script';

const CSRF = 'k'.repeat(43);
const REDIRECT = 'https://app.example.com/cb';
const CLIENT = 'cli_0123456789abcdefghijklmnop';
const OPTIONS = JSON.stringify({ challenge: 'Y2hhbGxlbmdl', rpId: 'auth.example.com', userVerification: 'required', allowCredentials: [{ id: 'AQID', type: 'public-key' }] });
const SESSION = (token: string, amr: string[]): identity.CreatedSession => ({
  token,
  session: { id: `ses_${token}`, environment: 'live', userId: 'user_1', metadataJson: '{}', createdAt: '2025-01-01T00:00:00Z', expiresAt: '2025-01-02T00:00:00Z', amr, acr: '', mfaAt: undefined },
});

interface Call {
  method: string;
  req: Record<string, unknown>;
  headers: Record<string, string>;
}

/** Identity as the authorization pages use it; every call recorded. */
function fakeIdentity(calls: Call[]) {
  const rec =
    <R>(method: string, answer: (req: never) => R | Promise<R>) =>
    async (req: never, opts: { headers: Record<string, string> }) => {
      calls.push({ method, req, headers: opts.headers });
      return answer(req);
    };
  const sessions: Record<string, string[]> = { sst_pwd: ['pwd'], sst_mfa: ['pwd', 'otp', 'mfa'] };
  return {
    authorize: rec('authorize', (r: identity.AuthorizeRequest): identity.AuthorizeResponse => {
      const base = { error: '', errorDescription: '', redirectTo: '', clientName: 'Example <App>', environment: 'live', redirectUri: REDIRECT, scopes: [], userEmail: '' };
      if (!r.sessionToken) {
        if (r.prompt === 'none') return { ...base, outcome: 'redirect', redirectTo: `${REDIRECT}?error=login_required&state=${r.state}` };
        return { ...base, outcome: 'login' };
      }
      return { ...base, outcome: 'redirect', redirectTo: `${REDIRECT}?code=ocd_for_${r.sessionToken}&state=${r.state}` };
    }),
    startPasskeyAuthentication: rec('startPasskeyAuthentication', (r: identity.StartPasskeyAuthenticationRequest) => ({
      challengeId: r.userId ? 'mfc_stepup' : 'mfc_login',
      optionsJson: OPTIONS,
      expiresAt: '2025-01-01T00:05:00Z',
    })),
    login: rec('login', (r: identity.LoginRequest): identity.LoginResponse => {
      if (r.password !== 'right') throw new AppError('unauthorized', 'Invalid email or password');
      if (r.email === 'plain@example.com') return { session: SESSION('sst_pwd', ['pwd']) };
      return {
        mfa: {
          mfaToken: 'mft_token',
          expiresAt: '2025-01-01T00:05:00Z',
          factors: [
            { id: 'mfa_1', environment: 'live', userId: 'user_1', type: 'totp', name: 'Phone', confirmed: true, createdAt: '', remainingCodes: 0, backedUp: false },
            { id: 'mfa_2', environment: 'live', userId: 'user_1', type: 'recovery_codes', name: 'Codes', confirmed: true, createdAt: '', remainingCodes: 8, backedUp: false },
          ],
          passkeyOptionsJson: r.email === 'passkey@example.com' ? OPTIONS : '',
          enrollmentRequired: false,
        },
      };
    }),
    completeMfaLogin: rec('completeMfaLogin', (r: identity.CompleteMfaLoginRequest) => {
      if (r.mfaToken !== 'mft_token') throw AppError.field('mfaToken', 'unknown, used or expired token');
      if (r.proof!.code === '999999') throw new AppError('rate_limited', 'Too many failed second-factor attempts', [], 120);
      if (r.proof!.code === '123456' || r.proof!.type === 'passkey') return SESSION('sst_mfa', ['pwd', 'otp', 'mfa']);
      throw new AppError('unauthorized', 'The second factor was not accepted', [{ field: 'code', message: 'is not a current code' }]);
    }),
    completePasskeyLogin: rec('completePasskeyLogin', (r: identity.CompletePasskeyLoginRequest) => {
      if (r.challengeId !== 'mfc_login') throw AppError.field('challengeId', 'unknown, used or expired challenge');
      return SESSION('sst_mfa', ['hwk', 'user', 'mfa']);
    }),
    verifySession: rec('verifySession', (r: identity.VerifySessionRequest): identity.VerifySessionResponse => {
      const amr = sessions[r.token];
      if (!amr) return { valid: false };
      return {
        valid: true,
        session: SESSION(r.token, amr).session,
        user: { id: 'user_1', environment: 'live', email: 'ada@example.com', name: 'Ada', emailVerified: true, roles: [], metadataJson: '{}', createdAt: '', updatedAt: '' },
      };
    }),
    listMfaFactors: rec('listMfaFactors', () => ({
      factors: [
        { id: 'mfa_1', environment: 'live', userId: 'user_1', type: 'totp', name: 'Phone', confirmed: true, createdAt: '', remainingCodes: 0, backedUp: false },
        { id: 'mfa_3', environment: 'live', userId: 'user_1', type: 'passkey', name: 'Key', confirmed: true, createdAt: '', remainingCodes: 0, backedUp: true },
      ],
      mfaRequired: environmentRequiresMfa,
    })),
    stepUpSession: rec('stepUpSession', (r: identity.StepUpSessionRequest) => {
      if (r.proof!.code !== '123456') throw new AppError('unauthorized', 'The second factor was not accepted');
      sessions.sst_pwd = ['pwd', 'otp', 'mfa'];
      return SESSION('sst_pwd', sessions.sst_pwd).session;
    }),
  };
}

let server: Server;
let base: string;
let calls: Call[];
let issuer = 'https://auth.example.com';

async function start(): Promise<void> {
  calls = [];
  const app = express();
  app.set('trust proxy', 'loopback');
  const deps = {
    clients: { identity: fakeIdentity(calls) } as unknown as OAuthDeps['clients'],
    get issuer() {
      return issuer;
    },
    deadlineMs: 1000,
    logger: createLogger('test', 'silent'),
  } as OAuthDeps;
  app.use(oauthRouter(deps));
  server = await new Promise<Server>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

beforeEach(start);
afterEach(() => new Promise<void>((resolve) => server.close(() => resolve())));

const query = { client_id: CLIENT, redirect_uri: REDIRECT, response_type: 'code', scope: 'openid', state: 'st1' };
const get = (params: Record<string, string>, cookie = '') =>
  fetch(`${base}/oauth/authorize?${new URLSearchParams(params)}`, { redirect: 'manual', headers: { cookie, 'user-agent': 'jest-browser' } });
const post = (fields: Record<string, string>, cookie = '') =>
  fetch(`${base}/oauth/authorize`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: `secsvc_oauth_csrf=${CSRF}${cookie ? `; ${cookie}` : ''}`, 'user-agent': 'jest-browser' },
    body: new URLSearchParams({ ...query, ...fields, csrf_token: CSRF }),
  });
const callsOf = (method: string) => calls.filter((c) => c.method === method);
const hiddenOf = (html: string) =>
  Object.fromEntries([...html.split('</form>')[0]!.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((m) => [m[1]!, m[2]!.replace(/&amp;/g, '&').replace(/&quot;/g, '"')]));

/** The environment's MFA requirement as the fake identity answers it (listMfaFactors.mfaRequired). */
let environmentRequiresMfa = false;

describe('the login page', () => {
  it('offers a passwordless passkey (a fresh challenge) with the script allowed, for an issuer with a domain', async () => {
    const res = await get(query);
    const html = await res.text();
    expect(res.status).toBe(200);
    expect(res.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(html).toContain('<script src="/oauth/assets/passkey.js" defer></script>');
    expect(html).toContain('<input type="hidden" name="challenge_id" value="mfc_login">');
    expect(callsOf('startPasskeyAuthentication').map((c) => c.req)).toEqual([{ environment: 'live', userId: '' }]);
  });

  it('offers none for an IP issuer: no script, no script-src', async () => {
    issuer = 'http://127.0.0.1:8080';
    try {
      const res = await get(query);
      const html = await res.text();
      expect(res.headers.get('content-security-policy')).not.toContain('script-src');
      expect(html).not.toMatch(/<script|passkey/i);
      expect(callsOf('startPasskeyAuthentication')).toEqual([]);
    } finally {
      issuer = 'https://auth.example.com';
    }
  });
});

describe('the second step of a password login', () => {
  it('shows the MFA page (no session yet), then a right code sets the session cookie and goes on to the client', async () => {
    const first = await post({ action: 'login', email: 'ada@example.com', password: 'right' });
    const html = await first.text();
    expect(first.status).toBe(200);
    expect(first.headers.get('set-cookie')).not.toContain('secsvc_oauth_session');
    expect(first.headers.get('content-security-policy')).not.toContain('script-src');
    const fields = hiddenOf(html);
    expect(fields).toMatchObject({ ...query, action: 'mfa', mfa_type: 'totp', mfa_token: 'mft_token', mfa_methods: 'totp recovery_code' });
    expect(html).toContain('autocomplete="one-time-code"');
    expect(html).toContain('name="mfa_type" value="recovery_code"');

    const done = await post({ ...fields, code: '123 456' });
    expect(done.status).toBe(303);
    expect(done.headers.get('location')).toBe(`${REDIRECT}?code=ocd_for_sst_mfa&state=st1`);
    expect(done.headers.get('set-cookie')).toMatch(/secsvc_oauth_session=sst_mfa; Path=\/oauth; HttpOnly; SameSite=Lax; Secure; Max-Age=86400/);
    const [complete] = callsOf('completeMfaLogin');
    expect(complete!.req).toEqual({ environment: 'live', mfaToken: 'mft_token', proof: { type: 'totp', code: '123456', credentialJson: '' }, ip: '127.0.0.1', userAgent: 'jest-browser' });
    expect(callsOf('authorize').at(-1)!.req).toMatchObject({ sessionToken: 'sst_mfa', freshLogin: true });
  });

  it('a refused code shows the page again (401), too many 429 with Retry-After, a malformed one 400 without asking identity', async () => {
    const fields = { action: 'mfa', mfa_type: 'totp', mfa_token: 'mft_token', mfa_methods: 'totp' };
    const wrong = await post({ ...fields, code: '000000' });
    const html = await wrong.text();
    expect(wrong.status).toBe(401);
    expect(html).toContain('role="alert"');
    expect(html).toContain('That code is not right');
    expect(hiddenOf(html)).toMatchObject({ mfa_token: 'mft_token', action: 'mfa' });
    const limited = await post({ ...fields, code: '999999' });
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('120');
    const before = callsOf('completeMfaLogin').length;
    const malformed = await post({ ...fields, code: 'abc' });
    expect(malformed.status).toBe(400);
    expect(await malformed.text()).toContain('Enter the 6-digit code');
    expect(callsOf('completeMfaLogin')).toHaveLength(before);
  });

  it('an expired or used token goes back to the login page', async () => {
    const res = await post({ action: 'mfa', mfa_type: 'totp', mfa_token: 'mft_gone', code: '123456' });
    const html = await res.text();
    expect(res.status).toBe(400);
    expect(html).toContain(SIGN_IN_EXPIRED);
    expect(hiddenOf(html)).toMatchObject({ action: 'login' });
  });

  it('offers the passkey of the challenge (script allowed) and sends its assertion as the proof', async () => {
    const page = await post({ action: 'login', email: 'passkey@example.com', password: 'right' });
    const html = await page.text();
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(html).toContain('id="passkey-options"');
    expect(html).toContain('name="mfa_type" value="passkey"');
    const credential = JSON.stringify({ id: 'AQID', rawId: 'AQID', type: 'public-key', response: {} });
    const done = await post({ action: 'mfa', mfa_type: 'passkey', mfa_token: 'mft_token', credential });
    expect(done.status).toBe(303);
    expect(callsOf('completeMfaLogin').at(-1)!.req).toMatchObject({ proof: { type: 'passkey', code: '', credentialJson: credential } });
  });

  it('a login without MFA goes on as before', async () => {
    const res = await post({ action: 'login', email: 'plain@example.com', password: 'right' });
    expect(res.status).toBe(303);
    expect(res.headers.get('set-cookie')).toContain('secsvc_oauth_session=sst_pwd');
    expect((await post({ action: 'login', email: 'plain@example.com', password: 'wrong' })).status).toBe(401);
  });
});

describe('passwordless passkey login', () => {
  it('completes with the page challenge (24 h session, the client named) and sets the session cookie', async () => {
    const res = await post({ action: 'passkey', challenge_id: 'mfc_login', credential: '{"id":"AQID"}' });
    expect(res.status).toBe(303);
    expect(res.headers.get('set-cookie')).toContain('secsvc_oauth_session=sst_mfa');
    expect(callsOf('completePasskeyLogin')[0]!.req).toEqual({
      environment: 'live',
      challengeId: 'mfc_login',
      credentialJson: '{"id":"AQID"}',
      ip: '127.0.0.1',
      userAgent: 'jest-browser',
      expiresInSeconds: 86_400,
      oauthClientId: CLIENT,
    });
  });

  it('an expired challenge shows the login page again', async () => {
    const res = await post({ action: 'passkey', challenge_id: 'mfc_old', credential: '{"id":"AQID"}' });
    expect(res.status).toBe(400);
    expect(await res.text()).toContain(SIGN_IN_EXPIRED);
  });
});

describe('acr_values=urn:secsvc:acr:mfa', () => {
  const mfa = { ...query, acr_values: 'urn:secsvc:acr:mfa' };

  it('steps up a login session without MFA before any code, as the session user', async () => {
    const page = await get(mfa, 'secsvc_oauth_session=sst_pwd');
    const html = await page.text();
    expect(page.status).toBe(200);
    expect(html).toContain('asks you to confirm it is you');
    expect(callsOf('authorize').every((c) => c.req.sessionToken === '')).toBe(true);
    const fields = hiddenOf(html);
    expect(fields).toMatchObject({ action: 'step_up', mfa_type: 'totp', acr_values: 'urn:secsvc:acr:mfa' });
    expect(html).toContain('<input type="hidden" name="challenge_id" value="mfc_stepup">');

    const refused = await post({ ...fields, code: '111111' }, 'secsvc_oauth_session=sst_pwd');
    expect(refused.status).toBe(401);
    const done = await post({ ...fields, code: '123456' }, 'secsvc_oauth_session=sst_pwd');
    expect(done.status).toBe(303);
    expect(done.headers.get('location')).toContain('code=ocd_for_sst_pwd');
    const stepUp = callsOf('stepUpSession').at(-1)!;
    expect(stepUp.req).toEqual({ environment: 'live', sessionId: 'ses_sst_pwd', proof: { type: 'totp', code: '123456', credentialJson: '' }, challengeId: '', ip: '127.0.0.1' });
    expect(stepUp.headers).toMatchObject({ 'x-actor-id': 'user_1', 'x-actor-type': 'user', 'x-actor-email': 'ada@example.com' });
  });

  it('lets a session with MFA through, and answers login_required to prompt=none', async () => {
    const through = await get(mfa, 'secsvc_oauth_session=sst_mfa');
    expect(through.status).toBe(302);
    expect(through.headers.get('location')).toContain('code=ocd_for_sst_mfa');
    const none = await get({ ...mfa, prompt: 'none' }, 'secsvc_oauth_session=sst_pwd');
    expect(none.status).toBe(302);
    expect(none.headers.get('location')).toContain('error=login_required');
  });

  it('a consent form cannot skip the step-up the environment requires (no acr_values asked)', async () => {
    const { acr_values: _asked, ...plain } = mfa;
    environmentRequiresMfa = true;
    try {
      const res = await post({ ...plain, action: 'consent', consent: 'allow' }, 'secsvc_oauth_session=sst_pwd');
      expect(res.status).toBe(200);
      expect(await res.text()).toContain('name="action" value="step_up"');
    } finally {
      environmentRequiresMfa = false;
    }
    // Without the requirement, the same form gets its code.
    const res = await post({ ...plain, action: 'consent', consent: 'allow' }, 'secsvc_oauth_session=sst_pwd');
    expect(await res.text()).not.toContain('name="action" value="step_up"');
  });

  it('a consent form cannot skip the step-up', async () => {
    const res = await post({ ...mfa, action: 'consent', consent: 'allow' }, 'secsvc_oauth_session=sst_pwd');
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('name="action" value="step_up"');
  });
});

describe('/oauth/assets/passkey.js', () => {
  it('is served as JavaScript', async () => {
    const res = await fetch(`${base}/oauth/assets/passkey.js`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/javascript/);
    expect(await res.text()).toBe(PASSKEY_SCRIPT);
  });

  /** The script in a minimal page: the data block, the form, the button, the alert region and WebAuthn. */
  function runScript(get: (o: unknown) => Promise<unknown>) {
    let submitted = false;
    let onClick: () => Promise<void> = async () => undefined;
    const credential = { value: '' };
    const elements: Record<string, unknown> = {
      'passkey-options': { textContent: OPTIONS },
      'passkey-form': { elements: { namedItem: (n: string) => (n === 'credential' ? credential : null) }, submit: () => (submitted = true) },
      'passkey-button': { hidden: true, disabled: false, addEventListener: (_e: string, f: () => Promise<void>) => (onClick = f) },
      alert: { hidden: true, textContent: '' },
    };
    const context = vm.createContext({
      document: { getElementById: (id: string) => elements[id] ?? null },
      window: { PublicKeyCredential: function PublicKeyCredential() {} },
      navigator: { credentials: { get } },
      atob,
      btoa,
      Uint8Array,
      JSON,
      Array,
      Object,
      String,
      Error,
    });
    vm.runInContext(PASSKEY_SCRIPT, context);
    return { elements, credential, click: () => onClick(), submitted: () => submitted };
  }

  const bytes = (...b: number[]) => new Uint8Array(b).buffer;

  it('turns the options into binary, serializes the assertion as base64url JSON and submits the form', async () => {
    let asked: { publicKey: { challenge: ArrayBuffer; allowCredentials: { id: ArrayBuffer }[]; rpId: string } } | undefined;
    const page = runScript(async (o) => {
      asked = o as typeof asked;
      return {
        id: 'AQID',
        rawId: bytes(1, 2, 3),
        type: 'public-key',
        authenticatorAttachment: 'platform',
        response: { clientDataJSON: bytes(123, 125), authenticatorData: bytes(255, 254), signature: bytes(48, 69), userHandle: bytes(117, 115) },
        getClientExtensionResults: () => ({}),
      };
    });
    expect((page.elements['passkey-button'] as { hidden: boolean }).hidden).toBe(false);
    await page.click();
    expect(Buffer.from(asked!.publicKey.challenge).toString()).toBe('challenge');
    expect([...new Uint8Array(asked!.publicKey.allowCredentials[0]!.id)]).toEqual([1, 2, 3]);
    expect(asked!.publicKey.rpId).toBe('auth.example.com');
    expect(JSON.parse(page.credential.value)).toEqual({
      id: 'AQID',
      rawId: 'AQID',
      type: 'public-key',
      response: { clientDataJSON: 'e30', authenticatorData: '__4', signature: 'MEU', userHandle: 'dXM' },
      clientExtensionResults: {},
      authenticatorAttachment: 'platform',
    });
    expect(page.submitted()).toBe(true);
  });

  it('shows a cancelled ceremony in the alert region and does not submit', async () => {
    const page = runScript(async () => {
      throw Object.assign(new Error('cancelled'), { name: 'NotAllowedError' });
    });
    await page.click();
    expect(page.submitted()).toBe(false);
    expect(page.elements.alert).toMatchObject({ hidden: false, textContent: expect.stringContaining('cancelled or timed out') });
    expect((page.elements['passkey-button'] as { disabled: boolean }).disabled).toBe(false);
  });
});
