import type { SecsvcClient } from '@secsvc/client';
import { unwrap } from '../../api/errors';
import { Pager, useCursorPages } from '../../components/CursorPager';
import { ErrorMessage, Link, Notice } from '../../components/ui';
import { formatTime } from '../../forms';

const PAGE_SIZE = 20;

/** The SAML connections of the environment, newest first. */
export function SsoConnectionsPage({ api, deleted }: { api: SecsvcClient; deleted: string | null }) {
  const { page, pages } = useCursorPages('sso-connections', async (cursor) =>
    unwrap(await api.GET('/v1/sso/connections', { params: { query: { limit: PAGE_SIZE, ...(cursor ? { cursor } : {}) } } })),
  );
  const connections = page.data?.data ?? [];
  return (
    <>
      <div className="page-head">
        <h1>SSO connections</h1>
        <Link to="/sso/new" className="button primary">
          New SSO connection
        </Link>
      </div>
      <p className="muted">SAML 2.0 identity providers: users of their email domains sign in there, and are created at their first login.</p>
      {deleted ? <Notice>The connection {deleted} was deleted; the users it created stay.</Notice> : null}
      {page.error ? <ErrorMessage error={page.error} title="The SSO connections could not be listed" /> : null}
      {page.loading ? (
        <p className="muted" role="status">
          Loading SSO connections…
        </p>
      ) : null}
      {page.data ? (
        connections.length === 0 ? (
          <p className="muted" role="status">
            No SSO connections yet.
          </p>
        ) : (
          <div className="table-wrap">
            <table className="list" aria-label="SSO connections">
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Domains</th>
                  <th scope="col">Identity provider</th>
                  <th scope="col">Created</th>
                </tr>
              </thead>
              <tbody>
                {connections.map((c) => (
                  <tr key={c.id}>
                    <td data-label="Name">
                      <Link to={`/sso/${c.id}`}>{c.name}</Link>
                    </td>
                    <td data-label="Domains">
                      {c.domains.map((d) => (
                        <span key={d} className="chip">
                          {d}
                        </span>
                      ))}
                    </td>
                    <td data-label="Identity provider">
                      <code>{c.idp.entityId}</code>
                    </td>
                    <td data-label="Created">{formatTime(c.createdAt)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )
      ) : null}
      <Pager label="Pages of SSO connections" pages={pages} />
    </>
  );
}
