import type { ReactNode } from 'react';
import type { SecsvcClient } from '@secsvc/client';
import { Link } from './components/ui';
import { NewUserPage } from './pages/NewUserPage';
import { UserPage } from './pages/UserPage';
import { UsersPage } from './pages/UsersPage';
import { apiKeysRoutes } from './pages/api-keys/routes';
import { logsRoutes } from './pages/logs/routes';
import { oauthClientsRoutes } from './pages/oauth-clients/routes';
import { policiesRoutes } from './pages/policies/routes';
import { ssoRoutes } from './pages/sso/routes';

/** A page of the console: its title (the document's) and what it shows. */
export interface PageRoute {
  title: string;
  element: ReactNode;
}

/** The main navigation: each area's list page, in order (an app path is in an area when it is the page or under it). */
export const AREAS: { to: string; label: string }[] = [
  { to: '/users', label: 'Users' },
  { to: '/api-keys', label: 'API keys' },
  { to: '/policies', label: 'Policies' },
  { to: '/logs', label: 'Audit log' },
  { to: '/sso', label: 'SSO' },
  { to: '/oauth-clients', label: 'OAuth clients' },
];

export const inArea = (path: string, area: string) => path === area || path.startsWith(`${area}/`);

function usersRoutes(api: SecsvcClient, path: string, search: URLSearchParams): PageRoute | undefined {
  if (path === '/' || path === '/users') return { title: 'Users', element: <UsersPage api={api} search={search} /> };
  if (path === '/users/new') return { title: 'New user', element: <NewUserPage api={api} /> };
  const m = /^\/users\/([^/]+)$/.exec(path);
  if (m) return { title: 'User', element: <UserPage key={m[1]} api={api} id={decodeURIComponent(m[1]!)} created={search.get('created') === '1'} /> };
  return undefined;
}

const AREA_ROUTES = [usersRoutes, apiKeysRoutes, policiesRoutes, logsRoutes, ssoRoutes, oauthClientsRoutes];

/** The page of an app path. */
export function route(api: SecsvcClient, path: string, search: URLSearchParams): PageRoute {
  for (const routes of AREA_ROUTES) {
    const page = routes(api, path, search);
    if (page) return page;
  }
  return {
    title: 'Not found',
    element: (
      <>
        <h1>Not found</h1>
        <p>
          Nothing lives at this address. <Link to="/users">Go to the users</Link>.
        </p>
      </>
    ),
  };
}
