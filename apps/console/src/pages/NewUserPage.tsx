import { useState } from 'react';
import type { operations, SecsvcClient } from '@secsvc/client';
import { splitDetails, unwrap } from '../api/errors';
import { ActionForm } from '../components/ActionForm';
import { Crumbs } from '../components/ui';
import { parseJsonText, parseRoles } from '../forms';
import { useAction } from '../hooks';
import { navigate } from '../router';
import { UserFields, type UserFormValues } from './UserFields';

const FIELDS = ['email', 'name', 'roles', 'metadata'];

type CreateUserBody = NonNullable<operations['createUser']['requestBody']>['content']['application/json'];

export function NewUserPage({ api }: { api: SecsvcClient }) {
  const [values, setValues] = useState<UserFormValues>({ email: '', name: '', roles: '', metadata: '{}' });
  const action = useAction();
  const metadata = parseJsonText(values.metadata);
  const { byField, rest } = splitDetails(action.error, FIELDS);
  if (!metadata.ok) byField.set('metadata', [{ field: 'metadata', message: metadata.message }]);

  const submit = () => {
    if (!metadata.ok) return;
    void action.run(async () => {
      const body = { email: values.email.trim(), name: values.name, roles: parseRoles(values.roles), metadata: metadata.value as CreateUserBody['metadata'] }; // any JSON value: the API names what it refuses
      const created = unwrap(await api.POST('/v1/users', { body }));
      navigate(`/users/${created.data.id}?created=1`);
    });
  };
  return (
    <>
      <Crumbs trail={[['/users', 'Users']]}>New user</Crumbs>
      <h1>New user</h1>
      <ActionForm action={action} failedTitle="The user was not created" extra={rest} onSubmit={submit} submitLabel="Create user" busyLabel="Creating…" cancelTo="/users">
        <UserFields values={values} onChange={setValues} errors={byField} withEmail />
      </ActionForm>
    </>
  );
}
