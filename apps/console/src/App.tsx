import { useEffect, useMemo, useState, useSyncExternalStore } from 'react';
import type { SecsvcClient } from '@secsvc/client';
import { apiClient } from './api/client';
import { apiErrorOf } from './api/errors';
import { OAuthSession, type ConsoleConfig, type Environment } from './auth/session';
import { EnvironmentSwitch, ErrorMessage, Link, TestBanner } from './components/ui';
import { SignInPage } from './pages/SignInPage';
import { appLocation, BASE, navigate, useAppLocation } from './router';
import { AREAS, inArea, route } from './routes';

/** The gateway's answer about the console: the issuer and the console's client of each environment. */
async function loadConfig(): Promise<ConsoleConfig> {
  const res = await fetch(`${BASE}/config.json`, { headers: { accept: 'application/json' }, cache: 'no-store', credentials: 'omit' });
  const body: unknown = await res.json().catch(() => undefined);
  if (!res.ok) throw apiErrorOf(body, res);
  return body as ConsoleConfig;
}

type Boot = { status: 'loading' } | { status: 'failed'; error: unknown } | { status: 'ready'; session: OAuthSession; api: SecsvcClient; config: ConsoleConfig };

export function App() {
  const [boot, setBoot] = useState<Boot>({ status: 'loading' });
  useEffect(() => {
    loadConfig().then(
      (config) => {
        const session = new OAuthSession({
          config,
          fetch: (input, init) => fetch(input, init),
          storage: sessionStorage,
          navigate: (url) => location.assign(url),
        });
        setBoot({ status: 'ready', session, config, api: apiClient(session, location.origin) });
      },
      (error: unknown) => setBoot({ status: 'failed', error }),
    );
  }, []);
  if (boot.status === 'loading') {
    return (
      <main id="main" className="signin">
        <p role="status">Loading the console…</p>
      </main>
    );
  }
  if (boot.status === 'failed') {
    return (
      <main id="main" className="signin">
        <h1>Admin console</h1>
        <ErrorMessage error={boot.error} title="The console could not start" />
      </main>
    );
  }
  return <Console session={boot.session} api={boot.api} config={boot.config} />;
}

/** Sign-in completions in flight, by callback URL: a code is redeemed once, however often the page renders. */
const completions = new Map<string, Promise<{ returnTo: string }>>();

function Console({ session, api, config }: { session: OAuthSession; api: SecsvcClient; config: ConsoleConfig }) {
  const state = useSyncExternalStore(
    (l) => session.subscribe(l),
    () => session.current,
  );
  const { path, search, href } = useAppLocation();
  const [callbackError, setCallbackError] = useState<unknown>();
  const onCallback = path === '/callback';
  const expectedOrigin = useMemo(() => new URL(config.redirectUri).origin, [config.redirectUri]);

  useEffect(() => {
    if (!onCallback) return;
    const key = href;
    let completion = completions.get(key);
    if (!completion) completions.set(key, (completion = session.completeSignIn(search)));
    completion.then(
      ({ returnTo }) => navigate(returnTo.startsWith('/') && !returnTo.startsWith('/callback') ? returnTo : '/users', { replace: true }),
      (err: unknown) => {
        setCallbackError(err);
        navigate('/', { replace: true });
      },
    );
  }, [onCallback, href, search, session]);

  if (location.origin !== expectedOrigin) {
    return (
      <main id="main" className="signin">
        <h1>Admin console</h1>
        <ErrorMessage error={new Error(`Open the console at ${expectedOrigin}${BASE}/ : sign-in returns there (the gateway's ISSUER).`)} />
      </main>
    );
  }
  if (onCallback) {
    return (
      <main id="main" className="signin">
        <p role="status">Signing in…</p>
      </main>
    );
  }
  if (state.status === 'signed-out') {
    const returnTo = path === '/' ? '/users' : appLocation();
    return <SignInPage session={session} returnTo={returnTo} reason={state.reason} error={callbackError} />;
  }
  return <SignedIn session={session} api={api} environment={state.environment} email={state.user.email} path={path} search={search} />;
}

function SignedIn(props: { session: OAuthSession; api: SecsvcClient; environment: Environment; email: string; path: string; search: URLSearchParams }) {
  const { session, api, environment, path, search } = props;
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const page = route(api, path, search);
  useEffect(() => {
    document.title = `${page.title} · Admin console${environment === 'test' ? ' (test)' : ''}`;
  }, [page.title, environment]);
  const signOut = () => {
    setBusy(true);
    session.signOut({ endLoginSession: true }).catch((err: unknown) => {
      setError(err);
      setBusy(false);
    });
  };
  const switchTo = (env: Environment) => {
    setBusy(true);
    session.switchEnvironment(env, appLocation()).catch((err: unknown) => {
      setError(err);
      setBusy(false);
    });
  };
  return (
    <>
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header>
        {environment === 'test' ? <TestBanner /> : null}
        <div className={`topbar topbar-${environment}`}>
          <Link to="/users" className="brand">
            Security Service <span>Admin console</span>
          </Link>
          <nav aria-label="Main" className="mainnav">
            {AREAS.map((a) => (
              <Link key={a.to} to={a.to} aria-current={inArea(path, a.to) || (a.to === '/users' && path === '/') ? 'page' : undefined}>
                {a.label}
              </Link>
            ))}
          </nav>
          <EnvironmentSwitch value={environment} available={session.environments} onChange={switchTo} disabled={busy} />
          <div className="account">
            <span className="account-email" title="Signed in as">
              {props.email}
            </span>
            <button type="button" className="button" onClick={signOut} disabled={busy}>
              Sign out
            </button>
          </div>
        </div>
      </header>
      <main id="main" className="content">
        {error ? <ErrorMessage error={error} /> : null}
        {page.element}
      </main>
    </>
  );
}
