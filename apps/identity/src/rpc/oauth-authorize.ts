import type { identity } from '@secsvc/proto';
import { withTransaction, type CallContext } from '@secsvc/shared';
import type { IdentityContext } from '../context';
import { checkAuthorization, CODE_TTL_SECONDS, redirectWith, scopesOutside } from '../domain/oauth';
import { generateOpaqueToken } from '../domain/opaque-tokens';
import { hashSessionToken, looksLikeSessionToken } from '../domain/sessions';
import { oauthClientsRepository, oauthCodesRepository, oauthConsentsRepository } from '../repositories/oauth';
import { sessionsRepository } from '../repositories/sessions';
import { usersRepository } from '../repositories/users';
import { CODE_PREFIX, hashCode, oauthEvent } from './oauth-support';

type Response = identity.AuthorizeResponse;

const blank: Response = {
  outcome: '',
  error: '',
  errorDescription: '',
  redirectTo: '',
  clientName: '',
  environment: '',
  redirectUri: '',
  scopes: [],
  userEmail: '',
};

/** An error shown on the server's own page: the redirect URI cannot be trusted (RFC 6749 4.1.2.1). */
const errorPage = (error: string, errorDescription: string): Response => ({ ...blank, outcome: 'error_page', error, errorDescription });

/**
 * The authorization endpoint's decision. Until client and redirect URI are known to belong together, errors
 * are shown on a page (never redirected: no open redirect); after that they go back to the client with
 * state and iss. Then: the login page when nobody (or not recently enough) is logged in, the consent page
 * when the client is not first party and the user has not yet granted every scope asked for, else a
 * single-use code (60 s) bound to client, redirect URI, PKCE challenge, nonce and scopes.
 */
export const authorize =
  (ctx: IdentityContext) =>
  async (req: identity.AuthorizeRequest, call: CallContext): Promise<Response> => {
    if (req.repeatedParams.includes('client_id')) return errorPage('invalid_request', 'client_id: given more than once');
    if (req.repeatedParams.includes('redirect_uri')) return errorPage('invalid_request', 'redirect_uri: given more than once');
    if (!req.clientId) return errorPage('invalid_request', 'client_id: is required');
    const client = /^cli_[0-9a-z]{26}$/.test(req.clientId) ? await oauthClientsRepository.get(ctx.pool, null, req.clientId) : undefined;
    if (!client) return errorPage('invalid_client', 'client_id: unknown client');
    if (!req.redirectUri) return errorPage('invalid_request', 'redirect_uri: is required');
    if (!client.redirect_uris.includes(req.redirectUri)) {
      return errorPage('invalid_request', 'redirect_uri: not registered for this client (redirect URIs must match exactly)');
    }
    const base: Response = { ...blank, clientName: client.name, environment: client.environment, redirectUri: req.redirectUri };
    const back = (params: Record<string, string>): Response => ({
      ...base,
      outcome: 'redirect',
      redirectTo: redirectWith(req.redirectUri, { ...params, state: req.state, iss: ctx.config.ISSUER }),
    });
    const backWithError = (error: string, description: string) => back({ error, error_description: description });

    const checked = checkAuthorization(req, client);
    if ('error' in checked) return backWithError(checked.error, checked.description);
    const { scopes, prompts, maxAge } = checked;

    // Who is logged in at the authorization server (the login page's session, in the client's environment).
    const session = looksLikeSessionToken(req.sessionToken)
      ? await sessionsRepository.findActiveByHash(ctx.pool, client.environment, hashSessionToken(req.sessionToken, ctx.config.SERVER_SECRET))
      : undefined;
    const user = session ? await usersRepository.get(ctx.pool, client.environment, session.user_id) : undefined;
    const tooOld = maxAge !== undefined && session !== undefined && Date.now() - session.created_at.getTime() > maxAge * 1000;
    if (!user || !session || (!req.freshLogin && (prompts.has('login') || tooOld))) {
      if (prompts.has('none')) return backWithError('login_required', 'the user is not logged in');
      return { ...base, outcome: 'login' };
    }

    if (req.consent === 'deny') return backWithError('access_denied', 'the user denied the request');
    if (req.consent !== 'allow') {
      const granted = client.first_party ? scopes : await oauthConsentsRepository.get(ctx.pool, user.id, client.id);
      if (scopesOutside(scopes, granted).length || prompts.has('consent')) {
        if (prompts.has('none')) return backWithError('consent_required', 'the user has not consented to these scopes');
        return { ...base, outcome: 'consent', scopes, userEmail: user.email };
      }
    }

    const code = generateOpaqueToken(CODE_PREFIX);
    await withTransaction(ctx.pool, async (db) => {
      if (req.consent === 'allow') {
        await oauthConsentsRepository.grant(db, client.environment, user.id, client.id, scopes);
        await oauthEvent(db, call, 'oauth.consent.granted', client.environment, { id: user.id, email: user.email, type: 'user' }, { id: client.id, type: 'oauth_client' }, 'success', {
          clientId: client.id,
          scopes,
        });
      }
      await oauthCodesRepository.insert(db, {
        hash: hashCode(code, ctx.config.SERVER_SECRET),
        environment: client.environment,
        clientId: client.id,
        userId: user.id,
        redirectUri: req.redirectUri,
        scopes,
        nonce: req.nonce,
        codeChallenge: req.codeChallenge,
        authTime: session.created_at,
        ttlSeconds: CODE_TTL_SECONDS,
      });
    });
    return back({ code });
  };
