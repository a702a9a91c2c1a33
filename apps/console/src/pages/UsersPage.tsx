import { useState, type FormEvent } from 'react';
import type { SecsvcClient } from '@secsvc/client';
import { unwrap } from '../api/errors';
import { ErrorMessage, Link, Notice } from '../components/ui';
import { formatTime } from '../forms';
import { useLoad } from '../hooks';
import { navigate } from '../router';

const PAGE_SIZE = 20;

/** Users, newest first, a page at a time (the API's cursors), searched by part of the email. */
export function UsersPage({ api, search }: { api: SecsvcClient; search: URLSearchParams }) {
  const email = search.get('email') ?? '';
  // A new search starts at the first page: the list's state belongs to one search.
  return <UserList key={email} api={api} email={email} deleted={search.get('deleted')} />;
}

function UserList({ api, email, deleted }: { api: SecsvcClient; email: string; deleted: string | null }) {
  const [query, setQuery] = useState(email);
  /** The cursors of the pages before this one (the first page has none). */
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors.at(-1);
  const page = useLoad(`${email}|${cursor ?? ''}`, async () =>
    unwrap(await api.GET('/v1/users', { params: { query: { limit: PAGE_SIZE, ...(cursor ? { cursor } : {}), ...(email ? { email } : {}) } } })),
  );
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const q = query.trim();
    navigate(q ? `/users?email=${encodeURIComponent(q)}` : '/users');
  };
  const users = page.data?.data ?? [];
  return (
    <>
      <div className="page-head">
        <h1>Users</h1>
        <Link to="/users/new" className="button primary">
          New user
        </Link>
      </div>
      {deleted ? <Notice>User {deleted} was deleted.</Notice> : null}
      <form className="search" role="search" onSubmit={submit}>
        <label htmlFor="user-search">Search by email</label>
        <div className="search-row">
          <input id="user-search" type="search" name="email" value={query} onChange={(e) => setQuery(e.target.value)} placeholder="part of an email" maxLength={254} />
          <button type="submit" className="button">
            Search
          </button>
          {email ? (
            <Link to="/users" className="button link">
              Clear
            </Link>
          ) : null}
        </div>
      </form>
      {page.error ? <ErrorMessage error={page.error} title="The users could not be listed" /> : null}
      {page.loading ? (
        <p className="muted" role="status">
          Loading users…
        </p>
      ) : null}
      {page.data ? (
        users.length === 0 ? (
          <p className="muted" role="status">
            {email ? `No user’s email contains “${email}”.` : 'No users yet.'}
          </p>
        ) : (
          <div className="table-wrap">
            <table className="list" aria-label={email ? `Users whose email contains ${email}` : 'Users'}>
              <thead>
                <tr>
                  <th scope="col">Email</th>
                  <th scope="col">Name</th>
                  <th scope="col">Roles</th>
                  <th scope="col">Created</th>
                </tr>
              </thead>
              <tbody>
                {users.map((u) => (
                  <tr key={u.id}>
                    <td data-label="Email">
                      <Link to={`/users/${u.id}`}>{u.email}</Link>
                    </td>
                    <td data-label="Name">{u.name}</td>
                    <td data-label="Roles">{u.roles.length ? u.roles.map((r) => <span key={r} className="chip">{r}</span>) : <span className="muted">none</span>}</td>
                    <td data-label="Created">{formatTime(u.createdAt)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )
      ) : null}
      <nav className="pager" aria-label="Pages of users">
        <button type="button" className="button" disabled={cursors.length === 0 || page.loading} onClick={() => setCursors((c) => c.slice(0, -1))}>
          Previous page
        </button>
        <span aria-live="polite">Page {cursors.length + 1}</span>
        <button
          type="button"
          className="button"
          disabled={!page.data?.pagination.hasMore || page.loading}
          onClick={() => {
            const next = page.data?.pagination.nextCursor;
            if (next) setCursors((c) => [...c, next]);
          }}
        >
          Next page
        </button>
      </nav>
    </>
  );
}
