import { useState, type FormEvent } from 'react';
import type { operations, Schemas, SecsvcClient } from '@secsvc/client';
import { splitDetails, unwrap } from '../api/errors';
import { ConfirmDialog, ErrorMessage, Link, Notice } from '../components/ui';
import { formatJson, formatRoles, formatTime, parseJsonText, parseRoles } from '../forms';
import { useLoad } from '../hooks';
import { navigate } from '../router';
import { UserFields, type UserFormValues } from './UserFields';

type User = Schemas['User'];
type UpdateUserBody = NonNullable<operations['updateUser']['requestBody']>['content']['application/json'];

/** One user: the details, the edit form, deletion, and the user's sessions. */
export function UserPage({ api, id, created }: { api: SecsvcClient; id: string; created: boolean }) {
  const user = useLoad(`user:${id}`, async () => unwrap(await api.GET('/v1/users/{id}', { params: { path: { id } } })).data);
  const [saved, setSaved] = useState(false);
  return (
    <>
      <p className="crumbs">
        <Link to="/users">Users</Link> / {user.data?.email ?? id}
      </p>
      {user.error ? <ErrorMessage error={user.error} title="The user could not be loaded" /> : null}
      {user.loading && !user.data ? (
        <p className="muted" role="status">
          Loading…
        </p>
      ) : null}
      {user.data ? (
        <>
          <h1>{user.data.email}</h1>
          {created ? <Notice>The user was created.</Notice> : null}
          {saved ? <Notice>Saved.</Notice> : null}
          <dl className="facts">
            <div>
              <dt>Id</dt>
              <dd>
                <code>{user.data.id}</code>
              </dd>
            </div>
            <div>
              <dt>Email verified</dt>
              <dd>{user.data.emailVerified ? 'yes' : 'no'}</dd>
            </div>
            <div>
              <dt>Created</dt>
              <dd>{formatTime(user.data.createdAt)}</dd>
            </div>
            <div>
              <dt>Updated</dt>
              <dd>{formatTime(user.data.updatedAt)}</dd>
            </div>
          </dl>
          <EditUser
            key={user.data.updatedAt}
            api={api}
            user={user.data}
            onSaved={() => {
              setSaved(true);
              user.reload();
            }}
            onEdit={() => setSaved(false)}
          />
          <Sessions api={api} user={user.data} />
          <DeleteUser api={api} user={user.data} />
        </>
      ) : null}
    </>
  );
}

const FIELDS = ['name', 'roles', 'metadata'];

function EditUser({ api, user, onSaved, onEdit }: { api: SecsvcClient; user: User; onSaved: () => void; onEdit: () => void }) {
  const initial: UserFormValues = { email: user.email, name: user.name, roles: formatRoles(user.roles), metadata: formatJson(user.metadata) };
  const [values, setValues] = useState(initial);
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const [unchanged, setUnchanged] = useState(false);
  const metadata = parseJsonText(values.metadata);
  const { byField, rest } = splitDetails(error, FIELDS);
  if (!metadata.ok) byField.set('metadata', [{ field: 'metadata', message: metadata.message }]);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (!metadata.ok) return;
    // Only what changed: metadata and roles replace the stored values as a whole.
    const body: UpdateUserBody = {};
    if (values.name !== initial.name) body.name = values.name;
    const roles = parseRoles(values.roles);
    if (roles.join(' ') !== user.roles.join(' ')) body.roles = roles;
    if (JSON.stringify(metadata.value) !== JSON.stringify(user.metadata)) body.metadata = metadata.value as UpdateUserBody['metadata']; // any JSON value: the API names what it refuses
    if (Object.keys(body).length === 0) return setUnchanged(true);
    setBusy(true);
    setError(undefined);
    try {
      unwrap(await api.PATCH('/v1/users/{id}', { params: { path: { id: user.id } }, body }));
      onSaved();
    } catch (err) {
      setError(err);
      setBusy(false);
    }
  };
  return (
    <section aria-labelledby="edit-title" className="card">
      <h2 id="edit-title">Edit</h2>
      {error ? <ErrorMessage error={error} extra={rest} title="The changes were not saved" /> : null}
      {unchanged ? <Notice>Nothing changed.</Notice> : null}
      <form
        className="form"
        onSubmit={submit}
        onChange={() => {
          setUnchanged(false);
          onEdit();
        }}
        noValidate
      >
        <UserFields values={values} onChange={setValues} errors={byField} withEmail={false} />
        <div className="actions">
          <button type="submit" className="button primary" disabled={busy}>
            {busy ? 'Saving…' : 'Save changes'}
          </button>
        </div>
      </form>
    </section>
  );
}

function Sessions({ api, user }: { api: SecsvcClient; user: User }) {
  const sessions = useLoad(`sessions:${user.id}`, async () => unwrap(await api.GET('/v1/users/{id}/sessions', { params: { path: { id: user.id } } })).data);
  const [confirm, setConfirm] = useState(false);
  /** The one session to revoke, while its confirmation is open. */
  const [one, setOne] = useState<string>();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const [revoked, setRevoked] = useState<string>();
  const revoke = async (sessionId?: string) => {
    setBusy(true);
    setError(undefined);
    try {
      if (sessionId) unwrap(await api.DELETE('/v1/users/{id}/sessions/{sessionId}', { params: { path: { id: user.id, sessionId } } }));
      else unwrap(await api.DELETE('/v1/users/{id}/sessions', { params: { path: { id: user.id } } }));
      setRevoked(sessionId ? `Session ${sessionId} was revoked.` : 'Every session of this user was revoked.');
      sessions.reload();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
      setConfirm(false);
      setOne(undefined);
    }
  };
  const list = sessions.data ?? [];
  return (
    <section aria-labelledby="sessions-title" className="card">
      <div className="section-head">
        <h2 id="sessions-title">Sessions</h2>
        <button type="button" className="button danger" onClick={() => setConfirm(true)} disabled={busy || list.length === 0}>
          Revoke all sessions
        </button>
      </div>
      {revoked ? <Notice>{revoked}</Notice> : null}
      {error ? <ErrorMessage error={error} title="The sessions were not revoked" /> : null}
      {sessions.error ? <ErrorMessage error={sessions.error} title="The sessions could not be listed" /> : null}
      {sessions.loading ? (
        <p className="muted" role="status">
          Loading sessions…
        </p>
      ) : null}
      {sessions.data && list.length === 0 ? <p className="muted">No active session.</p> : null}
      {list.length ? (
        <div className="table-wrap">
          <table className="list" aria-label={`Active sessions of ${user.email}`}>
            <thead>
              <tr>
                <th scope="col">Session</th>
                <th scope="col">Started</th>
                <th scope="col">Expires</th>
                <th scope="col">Sign-in</th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {list.map((s) => (
                <tr key={s.id}>
                  <td data-label="Session">
                    <code>{s.id}</code>
                  </td>
                  <td data-label="Started">{formatTime(s.createdAt)}</td>
                  <td data-label="Expires">{formatTime(s.expiresAt)}</td>
                  <td data-label="Sign-in">{s.amr.length ? s.amr.join(' ') : 'by the application'}{s.mfaAt ? ' (MFA)' : ''}</td>
                  <td data-label="Actions">
                    <button type="button" className="button" onClick={() => setOne(s.id)} disabled={busy} aria-label={`Revoke session ${s.id}`}>
                      Revoke
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
      <ConfirmDialog open={one !== undefined} title="Revoke this session?" confirmLabel="Revoke session" busy={busy} onConfirm={() => void revoke(one)} onCancel={() => setOne(undefined)}>
        <p>
          Session <code>{one}</code> of {user.email} ends now; the application using it must sign in again. Other sessions stay.
        </p>
      </ConfirmDialog>
      <ConfirmDialog open={confirm} title="Revoke every session?" confirmLabel="Revoke all sessions" busy={busy} onConfirm={() => void revoke()} onCancel={() => setConfirm(false)}>
        <p>
          {user.email} is signed out everywhere: all {list.length} active sessions end now. Their applications must sign in again.
        </p>
      </ConfirmDialog>
    </section>
  );
}

function DeleteUser({ api, user }: { api: SecsvcClient; user: User }) {
  const [confirm, setConfirm] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const remove = async () => {
    setBusy(true);
    setError(undefined);
    try {
      unwrap(await api.DELETE('/v1/users/{id}', { params: { path: { id: user.id } } }));
      navigate(`/users?deleted=${encodeURIComponent(user.email)}`);
    } catch (err) {
      setError(err);
      setBusy(false);
      setConfirm(false);
    }
  };
  return (
    <section aria-labelledby="delete-title" className="card danger-zone">
      <h2 id="delete-title">Delete user</h2>
      <p>Deletes the user and their data: sessions, passwords, MFA factors, OAuth grants. It cannot be undone.</p>
      {error ? <ErrorMessage error={error} title="The user was not deleted" /> : null}
      <button type="button" className="button danger" onClick={() => setConfirm(true)} disabled={busy}>
        Delete user
      </button>
      <ConfirmDialog open={confirm} title={`Delete ${user.email}?`} confirmLabel="Delete" busy={busy} onConfirm={() => void remove()} onCancel={() => setConfirm(false)}>
        <p>The user and their data are deleted for good.</p>
      </ConfirmDialog>
    </section>
  );
}
