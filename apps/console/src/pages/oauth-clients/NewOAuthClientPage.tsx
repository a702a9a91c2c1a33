import { useState, type FormEvent } from 'react';
import type { operations, Schemas, SecsvcClient } from '@secsvc/client';
import { splitDetails, unwrap } from '../../api/errors';
import { SecretOnce } from '../../components/SecretOnce';
import { ErrorMessage, Link, Notice } from '../../components/ui';
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
      <p className="crumbs">
        <Link to="/oauth-clients">OAuth clients</Link> / New OAuth client
      </p>
      {created ? <Created client={created} /> : <CreateForm api={api} onCreated={setCreated} />}
    </>
  );
}

function CreateForm({ api, onCreated }: { api: SecsvcClient; onCreated: (c: Schemas['OAuthClientCreated']) => void }) {
  const [values, setValues] = useState<ClientFormValues>({ name: '', type: 'confidential', redirectUris: '', scopes: ['openid'], firstParty: false });
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const redirect = parseRedirectUris(values.redirectUris);
  const { byField, rest } = splitDetails(error, FIELDS);
  if (redirect.problems.length) byField.set('redirectUris', redirect.problems);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (redirect.problems.length) return;
    setBusy(true);
    setError(undefined);
    try {
      const body = { name: values.name, type: values.type, redirectUris: redirect.uris, scopes: orderScopes(values.scopes) as CreateClientBody['scopes'], firstParty: values.firstParty }; // the API names a scope it does not know
      onCreated(unwrap(await api.POST('/v1/oauth/clients', { body })).data);
    } catch (err) {
      setError(err);
      setBusy(false);
    }
  };
  return (
    <>
      <h1>New OAuth client</h1>
      {error ? <ErrorMessage error={error} extra={rest} title="The client was not registered" /> : null}
      <form className="form settings-form" onSubmit={submit} noValidate>
        <ClientFields values={values} onChange={setValues} errors={byField} withType />
        <div className="actions">
          <button type="submit" className="button primary" disabled={busy}>
            {busy ? 'Registering…' : 'Register client'}
          </button>
          <Link to="/oauth-clients" className="button">
            Cancel
          </Link>
        </div>
      </form>
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
