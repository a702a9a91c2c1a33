import { useState } from 'react';
import type { operations, Schemas, SecsvcClient } from '@secsvc/client';
import { splitDetails, unwrap } from '../../api/errors';
import { SecretOnce } from '../../components/SecretOnce';
import { ActionForm } from '../../components/ActionForm';
import { Crumbs, Link, Notice } from '../../components/ui';
import { useAction } from '../../hooks';
import { ClientFacts } from './ClientFacts';
import { ClientFields, type ClientFormValues } from './ClientFields';
import { orderScopes, parseRedirectUris } from './clients';

const FIELDS = ['name', 'type', 'redirectUris', 'scopes', 'firstParty'];

type CreateClientBody = Extract<NonNullable<operations['createOAuthClient']['requestBody']>['content']['application/json'], { name: string }>;

/** Registers a client; a confidential one's secret is shown here once. */
export function NewOAuthClientPage({ api }: { api: SecsvcClient }) {
  const [created, setCreated] = useState<Schemas['OAuthClientCreated']>();
  return (
    <>
      <Crumbs trail={[['/oauth-clients', 'OAuth clients']]}>New OAuth client</Crumbs>
      {created ? <Created client={created} /> : <CreateForm api={api} onCreated={setCreated} />}
    </>
  );
}

function CreateForm({ api, onCreated }: { api: SecsvcClient; onCreated: (c: Schemas['OAuthClientCreated']) => void }) {
  const [values, setValues] = useState<ClientFormValues>({ name: '', type: 'confidential', redirectUris: '', scopes: ['openid'], firstParty: false });
  const action = useAction();
  const redirect = parseRedirectUris(values.redirectUris);
  const { byField, rest } = splitDetails(action.error, FIELDS);
  if (redirect.problems.length) byField.set('redirectUris', redirect.problems);

  const submit = () => {
    if (redirect.problems.length) return;
    void action.run(async () => {
      const body = { name: values.name, type: values.type, redirectUris: redirect.uris, scopes: orderScopes(values.scopes) as CreateClientBody['scopes'], firstParty: values.firstParty }; // the API names a scope it does not know
      onCreated(unwrap(await api.POST('/v1/oauth/clients', { body })).data);
    });
  };
  return (
    <>
      <h1>New OAuth client</h1>
      <ActionForm
        action={action}
        failedTitle="The client was not registered"
        extra={rest}
        className="form settings-form"
        onSubmit={submit}
        submitLabel="Register client"
        busyLabel="Registering…"
        cancelTo="/oauth-clients"
      >
        <ClientFields values={values} onChange={setValues} errors={byField} withType />
      </ActionForm>
    </>
  );
}

function Created({ client }: { client: Schemas['OAuthClientCreated'] }) {
  return (
    <>
      <h1>{client.name}</h1>
      <Notice>The {client.type} client was registered.</Notice>
      {client.clientSecret ? (
        <SecretOnce title="The client secret" label="Client secret" what="the client secret" value={client.clientSecret}>
          <p>
            The client authenticates with its id <code>{client.clientId}</code> and this secret at the token endpoint (<code>client_secret_basic</code> or{' '}
            <code>client_secret_post</code>).
          </p>
        </SecretOnce>
      ) : (
        <p>A public client has no secret: it uses PKCE.</p>
      )}
      <ClientFacts client={client} />
      <div className="actions">
        <Link to={`/oauth-clients/${client.clientId}`} className="button primary">
          {client.clientSecret ? 'I have copied it: go to the client' : 'Go to the client'}
        </Link>
        <Link to="/oauth-clients" className="button">
          Back to the OAuth clients
        </Link>
      </div>
    </>
  );
}
