import type { SecsvcClient } from '@secsvc/client';
import { unwrap } from '../../api/errors';
import { Pager, pageQuery, useCursorPages } from '../../components/CursorPager';
import { DataTable } from '../../components/DataTable';
import { ListState } from '../../components/LoadState';
import { Link, PageHead } from '../../components/ui';
import { formatTime } from '../../forms';
import { KeyStatusChip } from './KeyStatusChip';

/** The API keys of the environment, newest first, masked (the API never answers a key's secret again). */
export function ApiKeysPage({ api }: { api: SecsvcClient }) {
  const { page, pages } = useCursorPages('api-keys', async (cursor) => unwrap(await api.GET('/v1/api-keys', { params: { query: pageQuery(cursor) } })));
  return (
    <>
      <PageHead title="API keys" add={['/api-keys/new', 'New API key']} />
      <p className="muted">
        Keys call the API from servers (secret), browsers (public) or the test environment (test). Their secrets are shown once, when a key is created
        or rotated; here only the prefix and the last four characters.
      </p>
      <ListState page={page} failedTitle="The API keys could not be listed" loadingText="Loading API keys…" empty="No API keys yet.">
        {(rows) => (
          <DataTable
            label="API keys"
            rows={rows}
            rowKey={(k) => k.id}
            columns={[
              { label: 'Name', cell: (k) => <Link to={`/api-keys/${k.id}`}>{k.name}</Link> },
              { label: 'Key', cell: (k) => <code className="masked-key">{k.maskedKey}</code> },
              {
                label: 'Type',
                cell: (k) => (
                  <>
                    {k.type}
                    {k.environment === 'test' && k.type !== 'test' ? ' (test)' : ''}
                  </>
                ),
              },
              { label: 'Status', cell: (k) => <KeyStatusChip apiKey={k} /> },
              { label: 'Last used', cell: (k) => (k.lastUsedAt ? formatTime(k.lastUsedAt) : 'never') },
              { label: 'Created', cell: (k) => formatTime(k.createdAt) },
            ]}
          />
        )}
      </ListState>
      <Pager label="Pages of API keys" pages={pages} />
    </>
  );
}
