import type { SecsvcClient } from '@secsvc/client';
import type { PageRoute } from '../../routes';
import { ExportPage, ExportsPage } from './ExportCard';
import { LogEntryPage } from './LogEntryPage';
import { LogsPage } from './LogsPage';

/** The pages under /logs (owned by this folder): the log, its exports, one export, one entry. */
export function logsRoutes(api: SecsvcClient, path: string, search: URLSearchParams): PageRoute | undefined {
  if (path !== '/logs' && !path.startsWith('/logs/')) return undefined;
  if (path === '/logs') return { title: 'Audit log', element: <LogsPage api={api} search={search} /> };
  if (path === '/logs/exports') return { title: 'Exports', element: <ExportsPage api={api} /> };
  const exp = /^\/logs\/exports\/([^/]+)$/.exec(path);
  if (exp) return { title: 'Export', element: <ExportPage key={exp[1]} api={api} id={decodeURIComponent(exp[1]!)} /> };
  const entry = /^\/logs\/([^/]+)$/.exec(path);
  if (entry) return { title: 'Audit log entry', element: <LogEntryPage key={entry[1]} api={api} id={decodeURIComponent(entry[1]!)} back={search.get('back') ?? ''} /> };
  return undefined;
}
