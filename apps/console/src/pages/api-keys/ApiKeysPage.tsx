import type { SecsvcClient } from '@secsvc/client';
import { unwrap } from '../../api/errors';
import { Pager, useCursorPages } from '../../components/CursorPager';
import { ErrorMessage, Link } from '../../components/ui';
import { formatTime } from '../../forms';
import { KeyStatusChip } from './KeyStatusChip';

const PAGE_SIZE = 20;

/** The API keys of the environment, newest first, masked (the API never answers a key's secret again). */
export function ApiKeysPage({ api }: { api: SecsvcClient }) {
  const { page, pages } = useCursorPages('api-keys', async (cursor) => unwrap(await api.GET('/v1/api-keys', { params: { query: { limit: PAGE_SIZE, ...(cursor ? { cursor } : {}) } } })));
  const keys = page.data?.data ?? [];
  return (
    <>
      <div className="page-head">
        <h1>API keys</h1>
        <Link to="/api-keys/new" className="button primary">
          New API key
        </Link>
      </div>
      <p className="muted">
        Keys call the API from servers (secret), browsers (public) or the test environment (test). Their secrets are shown once, when a key is created
        or rotated; here only the prefix and the last four characters.
      </p>
      {page.error ? <ErrorMessage error={page.error} title="The API keys could not be listed" /> : null}
      {page.loading ? (
        <p className="muted" role="status">
          Loading API keys…
        </p>
      ) : null}
      {page.data ? (
        keys.length === 0 ? (
          <p className="muted" role="status">
            No API keys yet.
          </p>
        ) : (
          <div className="table-wrap">
            <table className="list" aria-label="API keys">
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Key</th>
                  <th scope="col">Type</th>
                  <th scope="col">Status</th>
                  <th scope="col">Last used</th>
                  <th scope="col">Created</th>
                </tr>
              </thead>
              <tbody>
                {keys.map((k) => (
                  <tr key={k.id}>
                    <td data-label="Name">
                      <Link to={`/api-keys/${k.id}`}>{k.name}</Link>
                    </td>
                    <td data-label="Key">
                      <code className="masked-key">{k.maskedKey}</code>
                    </td>
                    <td data-label="Type">
                      {k.type}
                      {k.environment === 'test' && k.type !== 'test' ? ' (test)' : ''}
                    </td>
                    <td data-label="Status">
                      <KeyStatusChip apiKey={k} />
                    </td>
                    <td data-label="Last used">{k.lastUsedAt ? formatTime(k.lastUsedAt) : 'never'}</td>
                    <td data-label="Created">{formatTime(k.createdAt)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )
      ) : null}
      <Pager label="Pages of API keys" pages={pages} />
    </>
  );
}
