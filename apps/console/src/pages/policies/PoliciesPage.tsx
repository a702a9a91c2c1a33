import type { SecsvcClient } from '@secsvc/client';
import { unwrap } from '../../api/errors';
import { Pager, useCursorPages } from '../../components/CursorPager';
import { ErrorMessage, Link, Notice } from '../../components/ui';
import { formatTime } from '../../forms';

const PAGE_SIZE = 20;

const Chips = ({ values }: { values: readonly string[] }) => (
  <>
    {values.map((v, i) => (
      <span key={i} className="chip">
        {v}
      </span>
    ))}
  </>
);

/** The policies, newest first, a page at a time (the API's cursors). */
export function PoliciesPage({ api, deleted }: { api: SecsvcClient; deleted: string | null }) {
  const { page, pages } = useCursorPages('policies', async (cursor) => unwrap(await api.GET('/v1/policies', { params: { query: { limit: PAGE_SIZE, ...(cursor ? { cursor } : {}) } } })));
  const policies = page.data?.data ?? [];
  return (
    <>
      <div className="page-head">
        <h1>Policies</h1>
        <Link to="/policies/new" className="button primary">
          New policy
        </Link>
      </div>
      {deleted ? <Notice>Policy {deleted} was deleted.</Notice> : null}
      <p className="muted">Any matching deny wins; otherwise any matching allow; otherwise the request is denied.</p>
      {page.error ? <ErrorMessage error={page.error} title="The policies could not be listed" /> : null}
      {page.loading ? (
        <p className="muted" role="status">
          Loading policies…
        </p>
      ) : null}
      {page.data ? (
        policies.length === 0 ? (
          <p className="muted" role="status">
            No policies yet: users can do nothing until a policy allows it.
          </p>
        ) : (
          <div className="table-wrap">
            <table className="list" aria-label="Policies">
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Effect</th>
                  <th scope="col">Principals</th>
                  <th scope="col">Actions</th>
                  <th scope="col">Resources</th>
                  <th scope="col">Created</th>
                </tr>
              </thead>
              <tbody>
                {policies.map((p) => (
                  <tr key={p.id}>
                    <td data-label="Name">
                      <Link to={`/policies/${p.id}`}>{p.name}</Link>
                    </td>
                    <td data-label="Effect">
                      <span className={`chip effect-${p.effect}`}>{p.effect}</span>
                    </td>
                    <td data-label="Principals">
                      <Chips values={p.principals} />
                    </td>
                    <td data-label="Actions">
                      <Chips values={p.actions} />
                    </td>
                    <td data-label="Resources">
                      <Chips values={p.resources} />
                    </td>
                    <td data-label="Created">{formatTime(p.createdAt)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )
      ) : null}
      <Pager label="Pages of policies" pages={pages} />
    </>
  );
}
