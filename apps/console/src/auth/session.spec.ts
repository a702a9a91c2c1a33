import { base64url } from './pkce';
import { OAuthSession, PENDING_KEY, SessionEndedError, SignInError, type ConsoleConfig } from './session';

const ISSUER = 'https://auth.example.com';
const CONFIG: ConsoleConfig = {
  issuer: ISSUER,
  redirectUri: `${ISSUER}/console/callback`,
  scope: 'openid email offline_access read:users',
  environments: { live: { clientId: 'cli_live' }, test: { clientId: 'cli_test' } },
};
const NOW = 1_700_000_000_000;

const jwt = (claims: Record<string, unknown>) => `${base64url(new TextEncoder().encode('{"alg":"ES256"}'))}.${base64url(new TextEncoder().encode(JSON.stringify(claims)))}.sig`;

interface Sent {
  url: string;
  body: Record<string, string>;
}

function setup() {
  const store = new Map<string, string>();
  const storage = { getItem: (k: string) => store.get(k) ?? null, setItem: (k: string, v: string) => void store.set(k, v), removeItem: (k: string) => void store.delete(k) };
  const sent: Sent[] = [];
  const answers: (Record<string, unknown> | ((body: Record<string, string>) => Record<string, unknown>))[] = [];
  let now = NOW;
  const timers: { fn: () => void; ms: number }[] = [];
  let navigatedTo = '';
  const fetch = jest.fn(async (url: string, init?: RequestInit) => {
    const body = Object.fromEntries(new URLSearchParams(String(init?.body ?? '')));
    sent.push({ url, body });
    const next = answers.shift() ?? {};
    const json = typeof next === 'function' ? next(body) : next;
    const status = typeof json.status === 'number' ? json.status : 200;
    return new Response(JSON.stringify(json), { status, headers: { 'content-type': 'application/json' } });
  });
  const session = new OAuthSession({
    config: CONFIG,
    fetch,
    storage,
    navigate: (url) => (navigatedTo = url),
    now: () => now,
    setTimer: (fn, ms) => timers.push({ fn, ms }),
    clearTimer: () => undefined,
  });
  return {
    session,
    store,
    sent,
    answers,
    timers,
    navigated: () => new URL(navigatedTo, ISSUER),
    advance: (ms: number) => (now += ms),
    tokenAnswer: (n: number, nonce?: string) => ({
      access_token: `at${n}`,
      token_type: 'Bearer',
      expires_in: 900,
      refresh_token: `rt${n}`,
      scope: CONFIG.scope,
      ...(nonce === undefined ? {} : { id_token: jwt({ iss: ISSUER, aud: 'cli_live', sub: 'user_1', email: 'ada@example.com', nonce, exp: NOW / 1000 + 900 }) }),
    }),
  };
}

async function signIn(t: ReturnType<typeof setup>) {
  await t.session.beginSignIn('live', '/console/users?email=ada');
  const url = t.navigated();
  const nonce = url.searchParams.get('nonce')!;
  t.answers.push(t.tokenAnswer(1, nonce));
  const done = await t.session.completeSignIn(new URLSearchParams({ code: 'ocd_1', state: url.searchParams.get('state')!, iss: ISSUER }));
  return { url, done };
}

describe('OAuthSession', () => {
  it('signs in with the code flow, PKCE S256, state and nonce, keeping only the request in flight across the redirect', async () => {
    const t = setup();
    const { url, done } = await signIn(t);
    expect(url.pathname).toBe('/oauth/authorize');
    expect(Object.fromEntries(url.searchParams)).toEqual({
      response_type: 'code',
      client_id: 'cli_live',
      redirect_uri: `${ISSUER}/console/callback`,
      scope: CONFIG.scope,
      state: expect.stringMatching(/^[\w-]{43}$/),
      nonce: expect.stringMatching(/^[\w-]{43}$/),
      code_challenge: expect.stringMatching(/^[\w-]{43}$/),
      code_challenge_method: 'S256',
    });
    expect(done).toEqual({ returnTo: '/console/users?email=ada' });
    expect(t.sent).toEqual([
      { url: '/oauth/token', body: { grant_type: 'authorization_code', code: 'ocd_1', redirect_uri: `${ISSUER}/console/callback`, code_verifier: expect.stringMatching(/^[\w-]{43}$/), client_id: 'cli_live' } },
    ]);
    expect(t.store.size).toBe(0);
    expect(t.session.current).toEqual({ status: 'signed-in', environment: 'live', user: { sub: 'user_1', email: 'ada@example.com', name: undefined } });
    expect(await t.session.accessToken()).toBe('at1');
    // the refresh is planned a minute before the access token expires
    expect(t.timers.at(-1)!.ms).toBe(840_000);
  });

  it('refuses a callback of another sign-in, another issuer, an error answer, or a wrong nonce', async () => {
    const t = setup();
    await expect(t.session.completeSignIn(new URLSearchParams({ code: 'c', state: 's' }))).rejects.toThrow('not started here');
    await t.session.beginSignIn('live', '/console/');
    await expect(t.session.completeSignIn(new URLSearchParams({ code: 'c', state: 'other' }))).rejects.toThrow('state differs');
    await t.session.beginSignIn('live', '/console/');
    let state = t.navigated().searchParams.get('state')!;
    await expect(t.session.completeSignIn(new URLSearchParams({ code: 'c', state, iss: 'https://evil.example' }))).rejects.toThrow('another issuer');
    await t.session.beginSignIn('live', '/console/');
    state = t.navigated().searchParams.get('state')!;
    const denied = await t.session.completeSignIn(new URLSearchParams({ error: 'access_denied', error_description: 'no', state })).catch((e: unknown) => e);
    expect(denied).toBeInstanceOf(SignInError);
    expect((denied as SignInError).error).toBe('access_denied');
    await t.session.beginSignIn('live', '/console/');
    state = t.navigated().searchParams.get('state')!;
    t.answers.push(t.tokenAnswer(1, 'not-the-nonce'));
    await expect(t.session.completeSignIn(new URLSearchParams({ code: 'c', state }))).rejects.toThrow('nonce');
    expect(t.session.current.status).toBe('signed-out');
  });

  it('refreshes before expiry, once for concurrent callers, with the rotated refresh token', async () => {
    const t = setup();
    await signIn(t);
    t.advance(850_000);
    t.answers.push(t.tokenAnswer(2));
    const [a, b] = await Promise.all([t.session.accessToken(), t.session.accessToken()]);
    expect([a, b]).toEqual(['at2', 'at2']);
    expect(t.sent.slice(1)).toEqual([{ url: '/oauth/token', body: { grant_type: 'refresh_token', refresh_token: 'rt1', client_id: 'cli_live' } }]);
    t.answers.push(t.tokenAnswer(3));
    t.timers.at(-1)!.fn();
    await new Promise((r) => setTimeout(r, 0));
    expect(t.sent.at(-1)!.body.refresh_token).toBe('rt2');
    expect(await t.session.accessToken()).toBe('at3');
  });

  it('ends the session when the refresh is refused, but not when the endpoint is busy', async () => {
    const t = setup();
    await signIn(t);
    t.answers.push({ status: 429, error: 'temporarily_unavailable', error_description: 'slow down' });
    await expect(t.session.refresh()).rejects.toThrow('slow down');
    expect(t.session.current.status).toBe('signed-in');
    t.answers.push({ status: 400, error: 'invalid_grant', error_description: 'refresh_token: revoked' });
    await expect(t.session.refresh()).rejects.toBeInstanceOf(SessionEndedError);
    expect(t.session.current).toEqual({ status: 'signed-out', reason: 'Your session has ended. Sign in again.' });
    await expect(t.session.accessToken()).rejects.toBeInstanceOf(SessionEndedError);
  });

  it('signs out by revoking the refresh token, forgets the tokens, and asks for the login page next time', async () => {
    const t = setup();
    await signIn(t);
    t.answers.push({});
    await t.session.signOut();
    expect(t.sent.at(-1)).toEqual({ url: '/oauth/revoke', body: { token: 'rt1', token_type_hint: 'refresh_token', client_id: 'cli_live' } });
    expect(t.session.tokens.current).toBeUndefined();
    expect(t.session.current).toEqual({ status: 'signed-out', reason: 'You are signed out.' });
    await t.session.beginSignIn('test', '/console/');
    expect(t.navigated().searchParams.get('prompt')).toBe('login');
    expect(t.navigated().searchParams.get('client_id')).toBe('cli_test');
    expect(JSON.parse(t.store.get(PENDING_KEY)!)).not.toHaveProperty('accessToken');
  });

  it('ends the login session through the end-session endpoint with the ID token, and takes the way back as signed out', async () => {
    const t = setup();
    await signIn(t);
    const idToken = t.session.tokens.current!.idToken!;
    t.answers.push({});
    await t.session.signOut({ endLoginSession: true });
    expect(t.sent.at(-1)!.url).toBe('/oauth/revoke');
    const logout = t.navigated();
    expect(logout.pathname).toBe('/oauth/logout');
    const state = logout.searchParams.get('state')!;
    expect(Object.fromEntries(logout.searchParams)).toEqual({ id_token_hint: idToken, post_logout_redirect_uri: CONFIG.redirectUri, state: expect.stringMatching(/^[\w-]{43}$/) });
    expect(t.store.get(PENDING_KEY)).not.toContain(idToken);
    // The callback, in a new page: this state and no code is the sign-out's way back.
    await expect(t.session.completeSignIn(new URLSearchParams({ state }))).resolves.toEqual({ returnTo: '/' });
    expect(t.session.current).toEqual({ status: 'signed-out', reason: 'You are signed out.' });
    expect(t.store.has(PENDING_KEY)).toBe(false);
    // Replayed, it belongs to nothing any more.
    await expect(t.session.completeSignIn(new URLSearchParams({ state }))).rejects.toThrow('not started here');
  });
});
