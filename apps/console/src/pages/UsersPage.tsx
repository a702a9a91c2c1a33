import { useState, type FormEvent } from 'react';
import type { SecsvcClient } from '@secsvc/client';
import { unwrap } from '../api/errors';
import { Pager, pageQuery, useCursorPages } from '../components/CursorPager';
import { DataTable } from '../components/DataTable';
import { ListState } from '../components/LoadState';
import { Link, Notice, PageHead } from '../components/ui';
import { formatTime } from '../forms';
import { navigate } from '../router';

/** Users, newest first, a page at a time (the API's cursors), searched by part of the email. */
export function UsersPage({ api, search }: { api: SecsvcClient; search: URLSearchParams }) {
  const email = search.get('email') ?? '';
  // A new search starts at the first page: the list's state belongs to one search.
  return <UserList key={email} api={api} email={email} deleted={search.get('deleted')} />;
}

function UserList({ api, email, deleted }: { api: SecsvcClient; email: string; deleted: string | null }) {
  const [query, setQuery] = useState(email);
  const { page, pages } = useCursorPages(email, async (cursor) =>
    unwrap(await api.GET('/v1/users', { params: { query: { ...pageQuery(cursor), ...(email ? { email } : {}) } } })),
  );
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const q = query.trim();
    navigate(q ? `/users?email=${encodeURIComponent(q)}` : '/users');
  };
  return (
    <>
      <PageHead title="Users" add={['/users/new', 'New user']} />
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
      <ListState
        page={page}
        failedTitle="The users could not be listed"
        loadingText="Loading users…"
        empty={email ? `No user’s email contains “${email}”.` : 'No users yet.'}
      >
        {(rows) => (
          <DataTable
            label={email ? `Users whose email contains ${email}` : 'Users'}
            rows={rows}
            rowKey={(u) => u.id}
            columns={[
              { label: 'Email', cell: (u) => <Link to={`/users/${u.id}`}>{u.email}</Link> },
              { label: 'Name', cell: (u) => u.name },
              {
                label: 'Roles',
                cell: (u) =>
                  u.roles.length ? (
                    u.roles.map((r) => (
                      <span key={r} className="chip">
                        {r}
                      </span>
                    ))
                  ) : (
                    <span className="muted">none</span>
                  ),
              },
              { label: 'Created', cell: (u) => formatTime(u.createdAt) },
            ]}
          />
        )}
      </ListState>
      <Pager label="Pages of users" pages={pages} />
    </>
  );
}
