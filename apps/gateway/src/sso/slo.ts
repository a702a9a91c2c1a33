import type { Request, Response } from 'express';
import { AppError } from '@secsvc/shared';
import type { identity } from '@secsvc/proto';
import { SamlRefusal } from './assertion';
import { callOptions, connectionOf, handler, keysOf, RELAY_STATE_MAX, store, type SsoDeps } from './context';
import { decodeLogoutMessage, logoutRequestFacts, logoutResponseFacts, redirectQuery } from './logout';
import { idpLogoutService } from './metadata';
import { sha1Policy, signatureAlgorithms, type Sha1Policy } from './signatures';
import { ANY_REQUEST, NO_REQUESTS, requestIdCache, samlFor, spUrls, type SpKeys } from './sp';
import { parseXml } from './xml';
import { requestOrigin } from '../http/origin';

/** The XML of a logout message, refused when one of its signatures rests on SHA-1 (unless allowed). */
function checkedXml(message: string, redirect: boolean, sha1: Sha1Policy, kind: string): string {
  const xml = decodeLogoutMessage(message, redirect);
  // HTTP-Redirect messages are signed over the query (SigAlg, checked with it), HTTP-POST ones in the document.
  if (!redirect) {
    let doc;
    try {
      doc = parseXml(xml);
    } catch {
      throw new SamlRefusal('malformed_xml');
    }
    sha1.check(signatureAlgorithms(doc), kind);
  }
  return xml;
}

// The IdP's answer to our LogoutRequest (SP-initiated single logout, see POST /v1/sso/logout): signed,
// Success, answering a request we sent for this connection (used once); then on to where the app asked.
async function logoutResponse(deps: SsoDeps, req: Request, res: Response, connection: identity.SsoConnection, keys: SpKeys, redirect: boolean, source: Record<string, string>): Promise<void> {
  const cache = requestIdCache(store(deps, req), connection.id, deps.requestTtlSeconds, undefined, 'logout');
  // node-saml checks InResponseTo before the signature: it gets a cache that accepts any id, and the request
  // is taken from the real one only once the signature holds (a forged response cannot use it up). Its
  // HTTP-POST path reads a LogoutResponse like a login Response (InResponseTo looked for on a Response element):
  // it is told not to check it at all, the check below does.
  const saml = samlFor(connection, { ...deps, keys }, ANY_REQUEST, { inResponseToCheckedByCaller: true });
  const sha1 = sha1Policy(connection, deps.logger, req.requestId);
  try {
    const query = redirect ? redirectQuery(req.originalUrl, source, sha1) : '';
    const xml = checkedXml(source.SAMLResponse!, redirect, sha1, 'LogoutResponse');
    const { inResponseTo } = logoutResponseFacts(xml, spUrls(deps.baseUrl, connection.id).sloUrl, connection.idpEntityId);
    if (redirect) await saml.validateRedirectAsync(source, query);
    else await saml.validatePostResponseAsync({ SAMLResponse: source.SAMLResponse! });
    if (!(await cache.getAsync(inResponseTo))) throw new SamlRefusal('unknown_request');
  } catch (err) {
    const reason = err instanceof SamlRefusal ? err.reason : `invalid_response: ${(err as Error).message.slice(0, 160)}`;
    deps.logger.info({ requestId: req.requestId, connectionId: connection.id, why: reason }, 'SAML LogoutResponse refused');
    throw new AppError('unauthorized', 'The SAML LogoutResponse was refused', [{ field: 'SAMLResponse', message: reason }]);
  }
  res.setHeader('Cache-Control', 'no-store');
  const returnTo = cache.taken()?.returnTo;
  if (returnTo) {
    res.redirect(303, returnTo);
    return;
  }
  res.status(200).json({ data: { loggedOut: true }, meta: { requestId: req.requestId } });
}

// Single logout initiated by the IdP (HTTP-Redirect or HTTP-POST LogoutRequest): the sessions that this
// connection's logins opened for the NameID (and SessionIndex) end; the IdP gets a signed LogoutResponse.
export const sloHandler = (deps: SsoDeps) =>
  handler(async (req, res) => {
  const keys = keysOf(deps);
  const connection = await connectionOf(deps, req);
  const redirect = req.method === 'GET';
  const source = ((redirect ? req.query : req.body) ?? {}) as Record<string, unknown>;
  if (source.SAMLRequest === undefined && typeof source.SAMLResponse === 'string' && source.SAMLResponse) {
    await logoutResponse(deps, req, res, connection, keys, redirect, source as Record<string, string>);
    return;
  }
  if (typeof source.SAMLRequest !== 'string' || !source.SAMLRequest) {
    throw AppError.field('SAMLRequest', 'is required (a LogoutRequest or LogoutResponse, HTTP-Redirect or HTTP-POST binding)');
  }
  const relayState = typeof source.RelayState === 'string' ? source.RelayState.slice(0, RELAY_STATE_MAX) : '';
  const logout = idpLogoutService(connection.idpMetadataXml);
  const saml = samlFor(connection, { ...deps, keys }, NO_REQUESTS, { logoutUrl: logout?.responseUrl });
  let request;
  const sha1 = sha1Policy(connection, deps.logger, req.requestId);
  try {
    const query = redirect ? redirectQuery(req.originalUrl, source, sha1) : '';
    const xml = checkedXml(source.SAMLRequest, redirect, sha1, 'LogoutRequest');
    const facts = logoutRequestFacts(xml, spUrls(deps.baseUrl, connection.id).sloUrl, deps.clockSkewMs);
    // Signature (the query's, or the document's for HTTP-POST), Issuer, NotOnOrAfter, NameID.
    const { profile } = redirect
      ? await saml.validateRedirectAsync(source as Record<string, string>, query)
      : await saml.validatePostRequestAsync({ SAMLRequest: source.SAMLRequest });
    if (!profile?.nameID) throw new SamlRefusal('no_name_id');
    request = { profile, ...facts };
  } catch (err) {
    const reason = err instanceof SamlRefusal ? err.reason : `invalid_request: ${(err as Error).message.slice(0, 160)}`;
    deps.logger.info({ requestId: req.requestId, connectionId: connection.id, why: reason }, 'SAML LogoutRequest refused');
    throw new AppError('unauthorized', 'The SAML LogoutRequest was refused', [{ field: 'SAMLRequest', message: reason }]);
  }
  const { revoked } = await deps.clients.identity.endSamlSessions(
    {
      connectionId: connection.id,
      nameId: request.profile.nameID,
      sessionIndexes: request.sessionIndexes,
      requestId: request.id,
      requestExpiresAt: request.expiresAt.toISOString(),
      ...requestOrigin(req),
    },
    callOptions(deps, req),
  );
  res.setHeader('Cache-Control', 'no-store');
  if (!logout) {
    // The IdP's metadata names no logout service to answer at.
    res.status(200).json({ data: { revoked }, meta: { requestId: req.requestId } });
    return;
  }
  res.redirect(302, await saml.getLogoutResponseUrlAsync(request.profile, relayState, {}, true));
});
