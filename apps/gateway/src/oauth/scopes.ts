import type { Route } from '../routes/route';

/** The API areas OAuth scopes cover: path prefix (relative to /v1) -> scope suffix. */
const AREAS: [prefix: string, area: string][] = [
  ['/users', 'users'],
  ['/sessions', 'users'],
  ['/policies', 'policies'],
  ['/logs', 'logs'],
];

/**
 * The scope an OAuth access token needs for a route: read:<area> to read (GET, and the read-only POSTs
 * /policies/simulate and /logs/search), write:<area> to change, export:logs for exports. Undefined: no
 * scope opens the route to OAuth tokens (API keys, OAuth clients, token exchange).
 */
export function requiredScope(route: Pick<Route, 'method' | 'path'>): string | undefined {
  const area = AREAS.find(([prefix]) => route.path === prefix || route.path.startsWith(`${prefix}/`))?.[1];
  if (!area) return undefined;
  if (area === 'logs' && route.path.startsWith('/logs/export')) return 'export:logs';
  const reads = route.method === 'get' || route.path === '/policies/simulate' || route.path === '/logs/search' || route.path === '/sessions/verify';
  return `${reads ? 'read' : 'write'}:${area}`;
}
