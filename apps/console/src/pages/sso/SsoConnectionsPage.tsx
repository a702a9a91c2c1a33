import type { SecsvcClient } from '@secsvc/client';
import { unwrap } from '../../api/errors';
import { Pager, pageQuery, useCursorPages } from '../../components/CursorPager';
import { DataTable } from '../../components/DataTable';
import { ListState } from '../../components/LoadState';
import { Link, Notice, PageHead } from '../../components/ui';
import { formatTime } from '../../forms';

/** The SAML connections of the environment, newest first. */
export function SsoConnectionsPage({ api, deleted }: { api: SecsvcClient; deleted: string | null }) {
  const { page, pages } = useCursorPages('sso-connections', async (cursor) =>
    unwrap(await api.GET('/v1/sso/connections', { params: { query: pageQuery(cursor) } })),
  );
  return (
    <>
      <PageHead title="SSO connections" add={['/sso/new', 'New SSO connection']} />
      <p className="muted">SAML 2.0 identity providers: users of their email domains sign in there, and are created at their first login.</p>
      {deleted ? <Notice>The connection {deleted} was deleted; the users it created stay.</Notice> : null}
      <ListState page={page} failedTitle="The SSO connections could not be listed" loadingText="Loading SSO connections…" empty="No SSO connections yet.">
        {(rows) => (
          <DataTable
            label="SSO connections"
            rows={rows}
            rowKey={(c) => c.id}
            columns={[
              { label: 'Name', cell: (c) => <Link to={`/sso/${c.id}`}>{c.name}</Link> },
              {
                label: 'Domains',
                cell: (c) =>
                  c.domains.map((d) => (
                    <span key={d} className="chip">
                      {d}
                    </span>
                  )),
              },
              { label: 'Identity provider', cell: (c) => <code>{c.idp.entityId}</code> },
              { label: 'Created', cell: (c) => formatTime(c.createdAt) },
            ]}
          />
        )}
      </ListState>
      <Pager label="Pages of SSO connections" pages={pages} />
    </>
  );
}
