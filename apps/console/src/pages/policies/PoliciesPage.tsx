import type { SecsvcClient } from '@secsvc/client';
import { unwrap } from '../../api/errors';
import { Pager, pageQuery, useCursorPages } from '../../components/CursorPager';
import { DataTable } from '../../components/DataTable';
import { ListState } from '../../components/LoadState';
import { Link, Notice, PageHead } from '../../components/ui';
import { formatTime } from '../../forms';

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
  const { page, pages } = useCursorPages('policies', async (cursor) => unwrap(await api.GET('/v1/policies', { params: { query: pageQuery(cursor) } })));
  return (
    <>
      <PageHead title="Policies" add={['/policies/new', 'New policy']} />
      {deleted ? <Notice>Policy {deleted} was deleted.</Notice> : null}
      <p className="muted">Any matching deny wins; otherwise any matching allow; otherwise the request is denied.</p>
      <ListState
        page={page}
        failedTitle="The policies could not be listed"
        loadingText="Loading policies…"
        empty="No policies yet: users can do nothing until a policy allows it."
      >
        {(rows) => (
          <DataTable
            label="Policies"
            rows={rows}
            rowKey={(x) => x.id}
            columns={[
              { label: 'Name', cell: (x) => <Link to={`/policies/${x.id}`}>{x.name}</Link> },
              { label: 'Effect', cell: (x) => <span className={`chip effect-${x.effect}`}>{x.effect}</span> },
              { label: 'Principals', cell: (x) => <Chips values={x.principals} /> },
              { label: 'Actions', cell: (x) => <Chips values={x.actions} /> },
              { label: 'Resources', cell: (x) => <Chips values={x.resources} /> },
              { label: 'Created', cell: (x) => formatTime(x.createdAt) },
            ]}
          />
        )}
      </ListState>
      <Pager label="Pages of policies" pages={pages} />
    </>
  );
}
