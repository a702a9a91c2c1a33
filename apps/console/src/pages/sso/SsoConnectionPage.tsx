import { useState, type FormEvent } from 'react';
import type { SecsvcClient } from '@secsvc/client';
import { splitDetails, unwrap } from '../../api/errors';
import { ConfirmDialog, ErrorMessage, Link, Notice } from '../../components/ui';
import { formatTime } from '../../forms';
import { useLoad } from '../../hooks';
import { navigate } from '../../router';
import { ConnectionFields, useMetadataProblem } from './ConnectionFields';
import { IdentityProviderFacts, ServiceProviderFacts } from './ServiceProviderFacts';
import { CONNECTION_FIELDS, connectionChanges, valuesOf, type ConnectionFormValues, type SsoConnection } from './sso';

/** One connection: what to give the IdP (SP metadata), what was read from it, the edit form and deletion. */
export function SsoConnectionPage({ api, id, created }: { api: SecsvcClient; id: string; created: boolean }) {
  const connection = useLoad(`sso-connection:${id}`, async () => unwrap(await api.GET('/v1/sso/connections/{id}', { params: { path: { id } } })).data);
  const [saved, setSaved] = useState(false);
  const c = connection.data;
  return (
    <>
      <p className="crumbs">
        <Link to="/sso">SSO connections</Link> / {c?.name ?? id}
      </p>
      {connection.error ? <ErrorMessage error={connection.error} title="The connection could not be loaded" /> : null}
      {connection.loading && !c ? (
        <p className="muted" role="status">
          Loading…
        </p>
      ) : null}
      {c ? (
        <>
          <h1>{c.name}</h1>
          {created ? <Notice>The connection was created. Give the identity provider the SP metadata below.</Notice> : null}
          {saved ? <Notice>Saved.</Notice> : null}
          <dl className="facts">
            <div>
              <dt>Id</dt>
              <dd>
                <code>{c.id}</code>
              </dd>
            </div>
            <div>
              <dt>Environment</dt>
              <dd>{c.environment}</dd>
            </div>
            <div>
              <dt>Created</dt>
              <dd>{formatTime(c.createdAt)}</dd>
            </div>
            <div>
              <dt>Updated</dt>
              <dd>{formatTime(c.updatedAt)}</dd>
            </div>
          </dl>
          <ServiceProviderFacts connection={c} />
          <IdentityProviderFacts connection={c} />
          <EditConnection
            key={c.updatedAt}
            api={api}
            connection={c}
            onSaved={() => {
              setSaved(true);
              connection.reload();
            }}
            onEdit={() => setSaved(false)}
          />
          <DeleteConnection api={api} connection={c} />
        </>
      ) : null}
    </>
  );
}

function EditConnection({ api, connection, onSaved, onEdit }: { api: SecsvcClient; connection: SsoConnection; onSaved: () => void; onEdit: () => void }) {
  const [values, setValues] = useState<ConnectionFormValues>(() => valuesOf(connection));
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const [unchanged, setUnchanged] = useState(false);
  const problem = useMetadataProblem(values.metadata, false);
  const { byField, rest } = splitDetails(error, CONNECTION_FIELDS);
  if (problem) byField.set('idpMetadataXml', [{ field: 'idpMetadataXml', message: problem }]);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (problem) return;
    const body = connectionChanges(connection, values);
    if (Object.keys(body).length === 0) return setUnchanged(true);
    setBusy(true);
    setError(undefined);
    try {
      unwrap(await api.PATCH('/v1/sso/connections/{id}', { params: { path: { id: connection.id } }, body }));
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
        className="form settings-form"
        onSubmit={submit}
        onChange={() => {
          setUnchanged(false);
          onEdit();
        }}
        noValidate
      >
        <ConnectionFields values={values} onChange={setValues} errors={byField} creating={false} />
        <div className="actions">
          <button type="submit" className="button primary" disabled={busy}>
            {busy ? 'Saving…' : 'Save changes'}
          </button>
        </div>
      </form>
    </section>
  );
}

function DeleteConnection({ api, connection }: { api: SecsvcClient; connection: SsoConnection }) {
  const [confirm, setConfirm] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const remove = async () => {
    setBusy(true);
    setError(undefined);
    try {
      unwrap(await api.DELETE('/v1/sso/connections/{id}', { params: { path: { id: connection.id } } }));
      navigate(`/sso?deleted=${encodeURIComponent(connection.name)}`);
    } catch (err) {
      setError(err);
      setBusy(false);
      setConfirm(false);
    }
  };
  return (
    <section aria-labelledby="delete-title" className="card danger-zone">
      <h2 id="delete-title">Delete connection</h2>
      <p>Users of {connection.domains.join(', ')} can no longer sign in through this IdP. The users it created stay, with their sessions.</p>
      {error ? <ErrorMessage error={error} title="The connection was not deleted" /> : null}
      <button type="button" className="button danger" onClick={() => setConfirm(true)} disabled={busy}>
        Delete connection
      </button>
      <ConfirmDialog open={confirm} title={`Delete ${connection.name}?`} confirmLabel="Delete" busy={busy} onConfirm={() => void remove()} onCancel={() => setConfirm(false)}>
        <p>The connection and its SP metadata URL end for good; the IdP’s logins to it are refused.</p>
      </ConfirmDialog>
    </section>
  );
}
