import type { SecsvcClient } from '@secsvc/client';
import type { PageRoute } from '../../routes';
import { NewOAuthClientPage } from './NewOAuthClientPage';
import { OAuthClientPage } from './OAuthClientPage';
import { OAuthClientsPage } from './OAuthClientsPage';

/** The pages under /oauth-clients (owned by this folder). */
export function oauthClientsRoutes(api: SecsvcClient, path: string, search: URLSearchParams): PageRoute | undefined {
  if (path !== '/oauth-clients' && !path.startsWith('/oauth-clients/')) return undefined;
  if (path === '/oauth-clients') return { title: 'OAuth clients', element: <OAuthClientsPage api={api} deleted={search.get('deleted')} /> };
  if (path === '/oauth-clients/new') return { title: 'New OAuth client', element: <NewOAuthClientPage api={api} /> };
  const m = /^\/oauth-clients\/([^/]+)$/.exec(path);
  if (m) return { title: 'OAuth client', element: <OAuthClientPage key={m[1]} api={api} id={decodeURIComponent(m[1]!)} /> };
  return undefined;
}
