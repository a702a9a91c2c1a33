import { useState } from 'react';
import type { operations, Schemas, SecsvcClient } from '@secsvc/client';
import { splitDetails, unwrap } from '../api/errors';
import { EditCard } from '../components/ActionForm';
import { DeleteSection } from '../components/ConfirmSection';
import { DataTable } from '../components/DataTable';
import { Facts } from '../components/Facts';
import { LoadState } from '../components/LoadState';
import { ConfirmDialog, Crumbs, ErrorMessage, Notice } from '../components/ui';
import { formatJson, formatRoles, formatTime, parseJsonText, parseRoles } from '../forms';
import { useAction, useLoad, useSaved } from '../hooks';
import { navigate } from '../router';
import { UserFields, type UserFormValues } from './UserFields';

type User = Schemas['User'];
type UpdateUserBody = NonNullable<operations['updateUser']['requestBody']>['content']['application/json'];

/** One user: the details, the edit form, deletion, and the user's sessions. */
export function UserPage({ api, id, created }: { api: SecsvcClient; id: string; created: boolean }) {
  const user = useLoad(`user:${id}`, async () => unwrap(await api.GET('/v1/users/{id}', { params: { path: { id } } })).data);
  const { saved, onSaved, onEdit } = useSaved(user.reload);
  return (
    <>
      <Crumbs trail={[['/users', 'Users']]}>{user.data?.email ?? id}</Crumbs>
      <LoadState load={user} failedTitle="The user could not be loaded">
        {(u) => (
          <>
            <h1>{u.email}</h1>
            {created ? <Notice>The user was created.</Notice> : null}
            {saved ? <Notice>Saved.</Notice> : null}
            <Facts
              items={[
                ['Id', <code>{u.id}</code>],
                ['Email verified', u.emailVerified ? 'yes' : 'no'],
                ['Created', formatTime(u.createdAt)],
                ['Updated', formatTime(u.updatedAt)],
              ]}
            />
            <EditUser key={u.updatedAt} api={api} user={u} onSaved={onSaved} onEdit={onEdit} />
            <Sessions api={api} user={u} />
            <DeleteSection
              thing="user"
              name={u.email}
              intro="Deletes the user and their data: sessions, passwords, MFA factors, OAuth grants. It cannot be undone."
              act={async () => {
                unwrap(await api.DELETE('/v1/users/{id}', { params: { path: { id: u.id } } }));
                navigate(`/users?deleted=${encodeURIComponent(u.email)}`);
              }}
            >
              <p>The user and their data are deleted for good.</p>
            </DeleteSection>
          </>
        )}
      </LoadState>
    </>
  );
}

const FIELDS = ['name', 'roles', 'metadata'];

function EditUser({ api, user, onSaved, onEdit }: { api: SecsvcClient; user: User; onSaved: () => void; onEdit: () => void }) {
  const initial: UserFormValues = { email: user.email, name: user.name, roles: formatRoles(user.roles), metadata: formatJson(user.metadata) };
  const [values, setValues] = useState(initial);
  const action = useAction();
  const metadata = parseJsonText(values.metadata);
  const { byField, rest } = splitDetails(action.error, FIELDS);
  if (!metadata.ok) byField.set('metadata', [{ field: 'metadata', message: metadata.message }]);

  const submit = (unchanged: () => void) => {
    if (!metadata.ok) return;
    // Only what changed: metadata and roles replace the stored values as a whole.
    const body: UpdateUserBody = {};
    if (values.name !== initial.name) body.name = values.name;
    const roles = parseRoles(values.roles);
    if (roles.join(' ') !== user.roles.join(' ')) body.roles = roles;
    if (JSON.stringify(metadata.value) !== JSON.stringify(user.metadata)) body.metadata = metadata.value as UpdateUserBody['metadata']; // any JSON value: the API names what it refuses
    if (Object.keys(body).length === 0) return unchanged();
    void action.run(async () => {
      unwrap(await api.PATCH('/v1/users/{id}', { params: { path: { id: user.id } }, body }));
      onSaved();
    });
  };
  return (
    <EditCard action={action} extra={rest} onSubmit={submit} onEdit={onEdit}>
      <UserFields values={values} onChange={setValues} errors={byField} withEmail={false} />
    </EditCard>
  );
}

function Sessions({ api, user }: { api: SecsvcClient; user: User }) {
  const sessions = useLoad(`sessions:${user.id}`, async () => unwrap(await api.GET('/v1/users/{id}/sessions', { params: { path: { id: user.id } } })).data);
  const [confirm, setConfirm] = useState(false);
  /** The one session to revoke, while its confirmation is open. */
  const [one, setOne] = useState<string>();
  const action = useAction();
  const busy = action.busy;
  const [revoked, setRevoked] = useState<string>();
  const revoke = async (sessionId?: string) => {
    await action.run(async () => {
      if (sessionId) unwrap(await api.DELETE('/v1/users/{id}/sessions/{sessionId}', { params: { path: { id: user.id, sessionId } } }));
      else unwrap(await api.DELETE('/v1/users/{id}/sessions', { params: { path: { id: user.id } } }));
      setRevoked(sessionId ? `Session ${sessionId} was revoked.` : 'Every session of this user was revoked.');
      sessions.reload();
    });
    setConfirm(false);
    setOne(undefined);
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
      {action.error ? <ErrorMessage error={action.error} title="The sessions were not revoked" /> : null}
      <LoadState load={sessions} failedTitle="The sessions could not be listed" loadingText="Loading sessions…">
        {(data) =>
          data.length === 0 ? (
            <p className="muted">No active session.</p>
          ) : (
            <DataTable
              label={`Active sessions of ${user.email}`}
              rows={data}
              rowKey={(s) => s.id}
              columns={[
                { label: 'Session', cell: (s) => <code>{s.id}</code> },
                { label: 'Started', cell: (s) => formatTime(s.createdAt) },
                { label: 'Expires', cell: (s) => formatTime(s.expiresAt) },
                { label: 'Sign-in', cell: (s) => (
                    <>
                      {s.amr.length ? s.amr.join(' ') : 'by the application'}
                      {s.mfaAt ? ' (MFA)' : ''}
                    </>
                  ),
                },
                {
                  label: 'Actions',
                  header: <span className="visually-hidden">Actions</span>,
                  cell: (s) => (
                    <button type="button" className="button" onClick={() => setOne(s.id)} disabled={busy} aria-label={`Revoke session ${s.id}`}>
                      Revoke
                    </button>
                  ),
                },
              ]}
            />
          )
        }
      </LoadState>
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
