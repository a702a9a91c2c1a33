import type { SecsvcClient } from '@secsvc/client';
import { unwrap } from '../../api/errors';
import { Pager, pageQuery, useCursorPages } from '../../components/CursorPager';
import { DataTable } from '../../components/DataTable';
import { ListState } from '../../components/LoadState';
import { Link, Notice, PageHead } from '../../components/ui';
import { formatTime } from '../../forms';
import { isConsoleClient } from './clients';

/** The OAuth clients of the environment, newest first; the console's own are marked. */
export function OAuthClientsPage({ api, deleted }: { api: SecsvcClient; deleted: string | null }) {
  const { page, pages } = useCursorPages('oauth-clients', async (cursor) =>
    unwrap(await api.GET('/v1/oauth/clients', { params: { query: pageQuery(cursor) } })),
  );
  return (
    <>
      <PageHead title="OAuth clients" add={['/oauth-clients/new', 'New OAuth client']} />
      {deleted ? <Notice>The client {deleted} was deleted; its grants have ended.</Notice> : null}
      <ListState page={page} failedTitle="The OAuth clients could not be listed" loadingText="Loading OAuth clients…" empty="No OAuth clients yet.">
        {(rows) => (
          <DataTable
            label="OAuth clients"
            rows={rows}
            rowKey={(c) => c.clientId}
            columns={[
              {
                label: 'Name',
                cell: (c) => (
                  <>
                    <Link to={`/oauth-clients/${c.clientId}`}>{c.name}</Link>
                    {isConsoleClient(c) ? <span className="chip chip-console">this console</span> : c.firstParty ? <span className="chip">first party</span> : null}
                  </>
                ),
              },
              { label: 'Client id', cell: (c) => <code>{c.clientId}</code> },
              { label: 'Type', cell: (c) => c.type },
              {
                label: 'Redirect URIs',
                cell: (c) =>
                  c.redirectUris.length ? (
                    <ul className="plain-list">
                      {c.redirectUris.map((u) => (
                        <li key={u}>
                          <code>{u}</code>
                        </li>
                      ))}
                    </ul>
                  ) : (
                    <span className="muted">none</span>
                  ),
              },
              { label: 'Created', cell: (c) => formatTime(c.createdAt) },
            ]}
          />
        )}
      </ListState>
      <Pager label="Pages of OAuth clients" pages={pages} />
    </>
  );
}
