import type { SecsvcClient } from '@secsvc/client';
import { unwrap } from '../../api/errors';
import { Pager, useCursorPages } from '../../components/CursorPager';
import { ErrorMessage, Link, Notice } from '../../components/ui';
import { formatTime } from '../../forms';
import { isConsoleClient } from './clients';

const PAGE_SIZE = 20;

/** The OAuth clients of the environment, newest first; the console's own are marked. */
export function OAuthClientsPage({ api, deleted }: { api: SecsvcClient; deleted: string | null }) {
  const { page, pages } = useCursorPages('oauth-clients', async (cursor) =>
    unwrap(await api.GET('/v1/oauth/clients', { params: { query: { limit: PAGE_SIZE, ...(cursor ? { cursor } : {}) } } })),
  );
  const clients = page.data?.data ?? [];
  return (
    <>
      <div className="page-head">
        <h1>OAuth clients</h1>
        <Link to="/oauth-clients/new" className="button primary">
          New OAuth client
        </Link>
      </div>
      {deleted ? <Notice>The client {deleted} was deleted; its grants have ended.</Notice> : null}
      {page.error ? <ErrorMessage error={page.error} title="The OAuth clients could not be listed" /> : null}
      {page.loading ? (
        <p className="muted" role="status">
          Loading OAuth clients…
        </p>
      ) : null}
      {page.data ? (
        clients.length === 0 ? (
          <p className="muted" role="status">
            No OAuth clients yet.
          </p>
        ) : (
          <div className="table-wrap">
            <table className="list" aria-label="OAuth clients">
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Client id</th>
                  <th scope="col">Type</th>
                  <th scope="col">Redirect URIs</th>
                  <th scope="col">Created</th>
                </tr>
              </thead>
              <tbody>
                {clients.map((c) => (
                  <tr key={c.clientId}>
                    <td data-label="Name">
                      <Link to={`/oauth-clients/${c.clientId}`}>{c.name}</Link>
                      {isConsoleClient(c) ? <span className="chip chip-console">this console</span> : c.firstParty ? <span className="chip">first party</span> : null}
                    </td>
                    <td data-label="Client id">
                      <code>{c.clientId}</code>
                    </td>
                    <td data-label="Type">{c.type}</td>
                    <td data-label="Redirect URIs">
                      {c.redirectUris.length ? (
                        <ul className="plain-list">
                          {c.redirectUris.map((u) => (
                            <li key={u}>
                              <code>{u}</code>
                            </li>
                          ))}
                        </ul>
                      ) : (
                        <span className="muted">none</span>
                      )}
                    </td>
                    <td data-label="Created">{formatTime(c.createdAt)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )
      ) : null}
      <Pager label="Pages of OAuth clients" pages={pages} />
    </>
  );
}
