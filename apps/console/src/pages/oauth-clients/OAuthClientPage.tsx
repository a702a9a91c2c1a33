import { useState } from 'react';
import type { SecsvcClient } from '@secsvc/client';
import { splitDetails, unwrap } from '../../api/errors';
import { EditCard } from '../../components/ActionForm';
import { DeleteSection } from '../../components/ConfirmSection';
import { LoadState } from '../../components/LoadState';
import { Crumbs, Notice } from '../../components/ui';
import { useAction, useLoad, useSaved } from '../../hooks';
import { navigate } from '../../router';
import { ClientFacts } from './ClientFacts';
import { ClientFields, type ClientFormValues } from './ClientFields';
import { clientChanges, formatRedirectUris, isConsoleClient, orderScopes, parseRedirectUris, type OAuthClient } from './clients';

/** One client: its facts, the edit form and deletion (with a louder warning for the console's own clients). */
export function OAuthClientPage({ api, id }: { api: SecsvcClient; id: string }) {
  const client = useLoad(`oauth-client:${id}`, async () => unwrap(await api.GET('/v1/oauth/clients/{id}', { params: { path: { id } } })).data);
  const { saved, onSaved, onEdit } = useSaved(client.reload);
  return (
    <>
      <Crumbs trail={[['/oauth-clients', 'OAuth clients']]}>{client.data?.name ?? id}</Crumbs>
      <LoadState load={client} failedTitle="The client could not be loaded">
        {(c) => (
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
            <EditClient key={c.updatedAt} api={api} client={c} onSaved={onSaved} onEdit={onEdit} />
            <DeleteClient api={api} client={c} />
          </>
        )}
      </LoadState>
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
  const action = useAction();
  const redirect = parseRedirectUris(values.redirectUris);
  const { byField, rest } = splitDetails(action.error, FIELDS);
  if (redirect.problems.length) byField.set('redirectUris', redirect.problems);

  const submit = (unchanged: () => void) => {
    if (redirect.problems.length) return;
    const body = clientChanges(client, { name: values.name, redirectUris: redirect.uris, scopes: values.scopes, firstParty: values.firstParty });
    if (Object.keys(body).length === 0) return unchanged();
    void action.run(async () => {
      unwrap(await api.PATCH('/v1/oauth/clients/{id}', { params: { path: { id: client.clientId } }, body }));
      onSaved();
    });
  };
  return (
    <EditCard action={action} extra={rest} className="form settings-form" onSubmit={submit} onEdit={onEdit}>
      <ClientFields values={values} onChange={setValues} errors={byField} withType={false} heldScopes={client.scopes} />
    </EditCard>
  );
}

function DeleteClient({ api, client }: { api: SecsvcClient; client: OAuthClient }) {
  return (
    <DeleteSection
      thing="client"
      name={client.name}
      intro="Every grant of the client ends at once: its refresh tokens die and every gateway refuses its access tokens. It cannot be undone."
      act={async () => {
        unwrap(await api.DELETE('/v1/oauth/clients/{id}', { params: { path: { id: client.clientId } } }));
        navigate(`/oauth-clients?deleted=${encodeURIComponent(client.name)}`);
      }}
    >
      {isConsoleClient(client) ? (
        <p className="dialog-warning">
          <strong>This is the console’s own client.</strong> Everyone signed in to the console with it is signed out, you too if it is this environment’s;
          identity makes a new one.
        </p>
      ) : null}
      <p>The client {client.clientId} and its grants end for good.</p>
    </DeleteSection>
  );
}
