import { useState } from 'react';
import type { SecsvcClient } from '@secsvc/client';
import { splitDetails, unwrap } from '../../api/errors';
import { ActionForm } from '../../components/ActionForm';
import { Crumbs } from '../../components/ui';
import { useAction } from '../../hooks';
import { navigate } from '../../router';
import { ConnectionFields, useMetadataProblem } from './ConnectionFields';
import { CONNECTION_FIELDS, createBody, EMPTY_CONNECTION, type ConnectionFormValues } from './sso';

export function NewSsoConnectionPage({ api }: { api: SecsvcClient }) {
  const [values, setValues] = useState<ConnectionFormValues>(EMPTY_CONNECTION);
  const action = useAction();
  /** The metadata's problem shows once something was typed, or after a first attempt. */
  const [tried, setTried] = useState(false);
  const problem = useMetadataProblem(values.metadata, true);
  const { byField, rest } = splitDetails(action.error, CONNECTION_FIELDS);
  if (problem && (tried || values.metadata.trim())) byField.set('idpMetadataXml', [{ field: 'idpMetadataXml', message: problem }]);

  const submit = () => {
    setTried(true);
    if (problem) return;
    void action.run(async () => {
      const created = unwrap(await api.POST('/v1/sso/connections', { body: createBody(values) })).data;
      navigate(`/sso/${created.id}?created=1`);
    });
  };
  return (
    <>
      <Crumbs trail={[['/sso', 'SSO connections']]}>New SSO connection</Crumbs>
      <h1>New SSO connection</h1>
      <ActionForm
        action={action}
        failedTitle="The connection was not created"
        extra={rest}
        className="form settings-form"
        onSubmit={submit}
        submitLabel="Create connection"
        busyLabel="Creating…"
        cancelTo="/sso"
      >
        <ConnectionFields values={values} onChange={setValues} errors={byField} creating />
      </ActionForm>
    </>
  );
}
