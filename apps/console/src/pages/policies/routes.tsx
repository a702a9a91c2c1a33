import type { SecsvcClient } from '@secsvc/client';
import type { PageRoute } from '../../routes';
import { NewPolicyPage } from './NewPolicyPage';
import { PoliciesPage } from './PoliciesPage';
import { PolicyPage } from './PolicyPage';

/** The pages under /policies (owned by this folder): the list, a new policy, one policy with the simulator. */
export function policiesRoutes(api: SecsvcClient, path: string, search: URLSearchParams): PageRoute | undefined {
  if (path === '/policies') return { title: 'Policies', element: <PoliciesPage key={search.get('deleted') ?? ''} api={api} deleted={search.get('deleted')} /> };
  if (path === '/policies/new') return { title: 'New policy', element: <NewPolicyPage api={api} /> };
  const m = /^\/policies\/([^/]+)$/.exec(path);
  if (m) return { title: 'Policy', element: <PolicyPage key={m[1]} api={api} id={decodeURIComponent(m[1]!)} created={search.get('created') === '1'} /> };
  return undefined;
}
