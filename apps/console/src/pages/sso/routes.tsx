import type { SecsvcClient } from '@secsvc/client';
import type { PageRoute } from '../../routes';
import { NewSsoConnectionPage } from './NewSsoConnectionPage';
import { SsoConnectionPage } from './SsoConnectionPage';
import { SsoConnectionsPage } from './SsoConnectionsPage';

/** The pages under /sso (owned by this folder). */
export function ssoRoutes(api: SecsvcClient, path: string, search: URLSearchParams): PageRoute | undefined {
  if (path !== '/sso' && !path.startsWith('/sso/')) return undefined;
  if (path === '/sso') return { title: 'SSO connections', element: <SsoConnectionsPage api={api} deleted={search.get('deleted')} /> };
  if (path === '/sso/new') return { title: 'New SSO connection', element: <NewSsoConnectionPage api={api} /> };
  const m = /^\/sso\/([^/]+)$/.exec(path);
  if (m) return { title: 'SSO connection', element: <SsoConnectionPage key={m[1]} api={api} id={decodeURIComponent(m[1]!)} created={search.get('created') === '1'} /> };
  return undefined;
}
