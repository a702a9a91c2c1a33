import type { Request, Response } from 'express';
import { setLoginSession } from '../http/cookies';
import { continuePage, sendPage } from '../oauth/pages';
import type { SsoDeps } from './context';

/** Where a SAML login goes once its session is open (after the ACS, or after its second factor). */
export interface LoginContinuation {
  connectionId: string;
  /** The OAuth authorization request (its query) the login started from on the OAuth login page, or ''. */
  returnTo: string;
  relayState: string;
  /** IdP-initiated into the app: the connection's initiateLoginUrl, or ''. */
  initiateLoginUrl: string;
  userId: string;
  provisioned: boolean;
}

/**
 * A SAML login has its session: on into the OAuth authorization request it started from, or (IdP-initiated)
 * to the app's login initiation URL, signed in on the OAuth login page either way; else the JSON answer.
 */
export function signIn(
  deps: SsoDeps,
  req: Request,
  res: Response,
  session: { token: string; expiresAt: string | undefined },
  next: LoginContinuation,
  /**
   * Answering a form of our own page (the MFA step), whose CSP's form-action would also bind the redirects
   * that follow the submission (to the client's redirect URI, to the app): go on through a page instead.
   */
  afterForm = false,
): void {
  res.setHeader('Cache-Control', 'no-store');
  const go = (url: string) => (afterForm ? sendPage(res, 200, continuePage(url, 'Signed in')) : res.redirect(303, url));
  const signInOnLoginPage = () =>
    setLoginSession(res, session.token, deps.baseUrl.startsWith('https:'));
  if (next.returnTo) {
    // Started on the OAuth login page: signed in there now, the authorization request goes on (consent
    // page or straight back to the client). The path is fixed; identity checks the request again.
    signInOnLoginPage();
    go(`${deps.baseUrl.replace(/\/+$/, '')}/oauth/authorize?${next.returnTo}`);
    return;
  }
  if (next.initiateLoginUrl) {
    // IdP-initiated (a tile on the IdP's dashboard): the app starts an ordinary authorization request (OpenID
    // Connect third-party-initiated login, `iss` names us), which finds the user signed in. No code or token
    // travels in this redirect.
    signInOnLoginPage();
    const target = new URL(next.initiateLoginUrl);
    target.searchParams.set('iss', deps.baseUrl.replace(/\/+$/, ''));
    go(target.href);
    return;
  }
  res.status(200).json({
    data: {
      token: session.token,
      expiresAt: session.expiresAt,
      userId: next.userId,
      provisioned: next.provisioned,
      connectionId: next.connectionId,
      relayState: next.relayState,
    },
    meta: { requestId: req.requestId },
  });
}
