import { useState } from 'react';
import type { SecsvcClient } from '@secsvc/client';
import { splitDetails, unwrap } from '../../api/errors';
import { EditCard } from '../../components/ActionForm';
import { DeleteSection } from '../../components/ConfirmSection';
import { Facts } from '../../components/Facts';
import { LoadState } from '../../components/LoadState';
import { Crumbs, Notice } from '../../components/ui';
import { formatTime } from '../../forms';
import { useAction, useLoad, useSaved } from '../../hooks';
import { navigate } from '../../router';
import { ConnectionFields, useMetadataProblem } from './ConnectionFields';
import { IdentityProviderFacts, ServiceProviderFacts } from './ServiceProviderFacts';
import { CONNECTION_FIELDS, connectionChanges, valuesOf, type ConnectionFormValues, type SsoConnection } from './sso';

/** One connection: what to give the IdP (SP metadata), what was read from it, the edit form and deletion. */
export function SsoConnectionPage({ api, id, created }: { api: SecsvcClient; id: string; created: boolean }) {
  const connection = useLoad(`sso-connection:${id}`, async () => unwrap(await api.GET('/v1/sso/connections/{id}', { params: { path: { id } } })).data);
  const { saved, onSaved, onEdit } = useSaved(connection.reload);
  return (
    <>
      <Crumbs trail={[['/sso', 'SSO connections']]}>{connection.data?.name ?? id}</Crumbs>
      <LoadState load={connection} failedTitle="The connection could not be loaded">
        {(c) => (
          <>
            <h1>{c.name}</h1>
            {created ? <Notice>The connection was created. Give the identity provider the SP metadata below.</Notice> : null}
            {saved ? <Notice>Saved.</Notice> : null}
            <Facts
              items={[
                ['Id', <code>{c.id}</code>],
                ['Environment', c.environment],
                ['Created', formatTime(c.createdAt)],
                ['Updated', formatTime(c.updatedAt)],
              ]}
            />
            <ServiceProviderFacts connection={c} />
            <IdentityProviderFacts connection={c} />
            <EditConnection key={c.updatedAt} api={api} connection={c} onSaved={onSaved} onEdit={onEdit} />
            <DeleteSection
              thing="connection"
              name={c.name}
              intro={`Users of ${c.domains.join(', ')} can no longer sign in through this IdP. The users it created stay, with their sessions.`}
              act={async () => {
                unwrap(await api.DELETE('/v1/sso/connections/{id}', { params: { path: { id: c.id } } }));
                navigate(`/sso?deleted=${encodeURIComponent(c.name)}`);
              }}
            >
              <p>The connection and its SP metadata URL end for good; the IdP’s logins to it are refused.</p>
            </DeleteSection>
          </>
        )}
      </LoadState>
    </>
  );
}

function EditConnection({ api, connection, onSaved, onEdit }: { api: SecsvcClient; connection: SsoConnection; onSaved: () => void; onEdit: () => void }) {
  const [values, setValues] = useState<ConnectionFormValues>(() => valuesOf(connection));
  const action = useAction();
  const problem = useMetadataProblem(values.metadata, false);
  const { byField, rest } = splitDetails(action.error, CONNECTION_FIELDS);
  if (problem) byField.set('idpMetadataXml', [{ field: 'idpMetadataXml', message: problem }]);

  const submit = (unchanged: () => void) => {
    if (problem) return;
    const body = connectionChanges(connection, values);
    if (Object.keys(body).length === 0) return unchanged();
    void action.run(async () => {
      unwrap(await api.PATCH('/v1/sso/connections/{id}', { params: { path: { id: connection.id } }, body }));
      onSaved();
    });
  };
  return (
    <EditCard action={action} extra={rest} className="form settings-form" onSubmit={submit} onEdit={onEdit}>
      <ConnectionFields values={values} onChange={setValues} errors={byField} creating={false} />
    </EditCard>
  );
}
