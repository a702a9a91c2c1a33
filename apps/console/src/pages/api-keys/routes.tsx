import type { SecsvcClient } from '@secsvc/client';
import type { PageRoute } from '../../routes';
import { ApiKeyPage } from './ApiKeyPage';
import { ApiKeysPage } from './ApiKeysPage';
import { NewApiKeyPage } from './NewApiKeyPage';

/** The pages under /api-keys (owned by this folder). */
export function apiKeysRoutes(api: SecsvcClient, path: string, search: URLSearchParams): PageRoute | undefined {
  void search;
  if (path !== '/api-keys' && !path.startsWith('/api-keys/')) return undefined;
  if (path === '/api-keys') return { title: 'API keys', element: <ApiKeysPage api={api} /> };
  if (path === '/api-keys/new') return { title: 'New API key', element: <NewApiKeyPage api={api} /> };
  const m = /^\/api-keys\/([^/]+)$/.exec(path);
  if (m) return { title: 'API key', element: <ApiKeyPage key={m[1]} api={api} id={decodeURIComponent(m[1]!)} /> };
  return undefined;
}
