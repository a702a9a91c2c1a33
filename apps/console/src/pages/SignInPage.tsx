import { useState } from 'react';
import type { Environment, OAuthSession } from '../auth/session';
import { EnvironmentSwitch, ErrorMessage, Notice, TestBanner } from '../components/ui';

/** Signed out: the environment to sign in to, and the button that goes to the product's login page. */
export function SignInPage({ session, returnTo, reason, error }: { session: OAuthSession; returnTo: string; reason?: string; error?: unknown }) {
  const available = session.environments;
  const [environment, setEnvironment] = useState<Environment>(available[0] ?? 'live');
  const [failure, setFailure] = useState<unknown>(error);
  const [busy, setBusy] = useState(false);
  const signIn = () => {
    setBusy(true);
    session.beginSignIn(environment, returnTo).catch((err: unknown) => {
      setFailure(err);
      setBusy(false);
    });
  };
  return (
    <>
      {environment === 'test' ? (
        <header>
          <TestBanner />
        </header>
      ) : null}
      <main id="main" className="signin">
        <h1>Admin console</h1>
        <p>Manage the users of the Security Service. You sign in with your own account; what you may do is what the policies allow your roles.</p>
        {reason ? <Notice>{reason}</Notice> : null}
        {failure ? <ErrorMessage error={failure} title="Sign-in failed" /> : null}
        {available.length === 0 ? (
          <ErrorMessage error={new Error('The console has no OAuth client: the gateway’s ISSUER gives no valid redirect URI (use https, or http on a loopback address).')} />
        ) : (
          <div className="signin-actions">
            <p className="label">Environment</p>
            <EnvironmentSwitch value={environment} available={available} onChange={setEnvironment} disabled={busy} />
            <button type="button" className="button primary" onClick={signIn} disabled={busy}>
              {busy ? 'Signing in…' : `Sign in to ${environment}`}
            </button>
          </div>
        )}
      </main>
    </>
  );
}
