// Every /v1 call of the console goes through the typed client generated from the OpenAPI document
// (@secsvc/client), with the signed-in user's access token: refreshed before it expires, and once more when the
// API answers 401 (a token revoked or expired meanwhile) before the call is retried.
import { createClient, type SecsvcClient } from '@secsvc/client';

export interface TokenSource {
  accessToken(): Promise<string>;
  refresh(): Promise<void>;
}

/** A fetch that sends `Authorization: Bearer <access token>`, refreshing and retrying once on a 401. */
export function authorizedFetch(tokens: TokenSource, send: (request: Request) => Promise<Response> = (r) => fetch(r)): (request: Request) => Promise<Response> {
  const withToken = async (request: Request) => {
    const headers = new Headers(request.headers);
    headers.set('authorization', `Bearer ${await tokens.accessToken()}`);
    return send(new Request(request, { headers, credentials: 'omit' }));
  };
  return async (request) => {
    const retry = request.clone();
    const first = await withToken(request);
    if (first.status !== 401) return first;
    await tokens.refresh();
    return withToken(retry);
  };
}

/** The typed client of this origin's API (paths carry their /v1 prefix). */
export function apiClient(tokens: TokenSource, origin: string): SecsvcClient {
  return createClient({ baseUrl: origin, fetch: authorizedFetch(tokens) });
}
