import { useState, type FormEvent } from 'react';
import type { SecsvcClient } from '@secsvc/client';
import { splitDetails, unwrap } from '../../api/errors';
import { ConfirmDialog, ErrorMessage, Link, Notice } from '../../components/ui';
import { useLoad } from '../../hooks';
import { navigate } from '../../router';
import { ClientFacts } from './ClientFacts';
import { ClientFields, type ClientFormValues } from './ClientFields';
import { clientChanges, formatRedirectUris, isConsoleClient, orderScopes, parseRedirectUris, type OAuthClient } from './clients';

/** One client: its facts, the edit form and deletion (with a louder warning for the console's own clients). */
export function OAuthClientPage({ api, id }: { api: SecsvcClient; id: string }) {
  const client = useLoad(`oauth-client:${id}`, async () => unwrap(await api.GET('/v1/oauth/clients/{id}', { params: { path: { id } } })).data);
  const [saved, setSaved] = useState(false);
  const c = client.data;
  return (
    <>
      <p className="crumbs">
        <Link to="/oauth-clients">OAuth clients</Link> / {c?.name ?? id}
      </p>
      {client.error ? <ErrorMessage error={client.error} title="The client could not be loaded" /> : null}
      {client.loading && !c ? (
        <p className="muted" role="status">
          Loading…
        </p>
      ) : null}
      {c ? (
        <>
          <h1>{c.name}</h1>
          {isConsoleClient(c) ? (
            <div className="alert alert-warning" role="note" aria-label="The console's own client">
              <p>
                <strong>This is one of this console’s own clients.</strong> Identity made it at start-up and puts it back as it was when it is changed or
                deleted (at the next start, or within 30 seconds when the console’s configuration is next read). Deleting it ends the grants of everyone
                signed in to the console with it, yours too if it is this environment’s.
              </p>
            </div>
          ) : null}
          {saved ? <Notice>Saved.</Notice> : null}
          <ClientFacts client={c} />
          <EditClient
            key={c.updatedAt}
            api={api}
            client={c}
            onSaved={() => {
              setSaved(true);
              client.reload();
            }}
            onEdit={() => setSaved(false)}
          />
          <DeleteClient api={api} client={c} />
        </>
      ) : null}
    </>
  );
}

const FIELDS = ['name', 'redirectUris', 'scopes', 'firstParty'];

function EditClient({ api, client, onSaved, onEdit }: { api: SecsvcClient; client: OAuthClient; onSaved: () => void; onEdit: () => void }) {
  const [values, setValues] = useState<ClientFormValues>({
    name: client.name,
    type: client.type,
    redirectUris: formatRedirectUris(client.redirectUris),
    scopes: orderScopes(client.scopes, client.scopes),
    firstParty: client.firstParty,
  });
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const [unchanged, setUnchanged] = useState(false);
  const redirect = parseRedirectUris(values.redirectUris);
  const { byField, rest } = splitDetails(error, FIELDS);
  if (redirect.problems.length) byField.set('redirectUris', redirect.problems);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (redirect.problems.length) return;
    const body = clientChanges(client, { name: values.name, redirectUris: redirect.uris, scopes: values.scopes, firstParty: values.firstParty });
    if (Object.keys(body).length === 0) return setUnchanged(true);
    setBusy(true);
    setError(undefined);
    try {
      unwrap(await api.PATCH('/v1/oauth/clients/{id}', { params: { path: { id: client.clientId } }, body }));
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
        <ClientFields values={values} onChange={setValues} errors={byField} withType={false} heldScopes={client.scopes} />
        <div className="actions">
          <button type="submit" className="button primary" disabled={busy}>
            {busy ? 'Saving…' : 'Save changes'}
          </button>
        </div>
      </form>
    </section>
  );
}

function DeleteClient({ api, client }: { api: SecsvcClient; client: OAuthClient }) {
  const [confirm, setConfirm] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const own = isConsoleClient(client);
  const remove = async () => {
    setBusy(true);
    setError(undefined);
    try {
      unwrap(await api.DELETE('/v1/oauth/clients/{id}', { params: { path: { id: client.clientId } } }));
      navigate(`/oauth-clients?deleted=${encodeURIComponent(client.name)}`);
    } catch (err) {
      setError(err);
      setBusy(false);
      setConfirm(false);
    }
  };
  return (
    <section aria-labelledby="delete-title" className="card danger-zone">
      <h2 id="delete-title">Delete client</h2>
      <p>Every grant of the client ends at once: its refresh tokens die and every gateway refuses its access tokens. It cannot be undone.</p>
      {error ? <ErrorMessage error={error} title="The client was not deleted" /> : null}
      <button type="button" className="button danger" onClick={() => setConfirm(true)} disabled={busy}>
        Delete client
      </button>
      <ConfirmDialog open={confirm} title={`Delete ${client.name}?`} confirmLabel="Delete" busy={busy} onConfirm={() => void remove()} onCancel={() => setConfirm(false)}>
        {own ? (
          <p className="dialog-warning">
            <strong>This is the console’s own client.</strong> Everyone signed in to the console with it is signed out, you too if it is this environment’s;
            identity makes a new one.
          </p>
        ) : null}
        <p>The client {client.clientId} and its grants end for good.</p>
      </ConfirmDialog>
    </section>
  );
}
