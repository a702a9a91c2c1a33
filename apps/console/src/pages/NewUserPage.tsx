import { useState, type FormEvent } from 'react';
import type { operations, SecsvcClient } from '@secsvc/client';
import { splitDetails, unwrap } from '../api/errors';
import { ErrorMessage, Link } from '../components/ui';
import { parseJsonText, parseRoles } from '../forms';
import { navigate } from '../router';
import { UserFields, type UserFormValues } from './UserFields';

const FIELDS = ['email', 'name', 'roles', 'metadata'];

type CreateUserBody = NonNullable<operations['createUser']['requestBody']>['content']['application/json'];

export function NewUserPage({ api }: { api: SecsvcClient }) {
  const [values, setValues] = useState<UserFormValues>({ email: '', name: '', roles: '', metadata: '{}' });
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const metadata = parseJsonText(values.metadata);
  const { byField, rest } = splitDetails(error, FIELDS);
  if (!metadata.ok) byField.set('metadata', [{ field: 'metadata', message: metadata.message }]);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (!metadata.ok) return;
    setBusy(true);
    setError(undefined);
    try {
      const body = { email: values.email.trim(), name: values.name, roles: parseRoles(values.roles), metadata: metadata.value as CreateUserBody['metadata'] }; // any JSON value: the API names what it refuses
      const created = unwrap(await api.POST('/v1/users', { body }));
      navigate(`/users/${created.data.id}?created=1`);
    } catch (err) {
      setError(err);
      setBusy(false);
    }
  };
  return (
    <>
      <p className="crumbs">
        <Link to="/users">Users</Link> / New user
      </p>
      <h1>New user</h1>
      {error ? <ErrorMessage error={error} extra={rest} title="The user was not created" /> : null}
      <form className="form" onSubmit={submit} noValidate>
        <UserFields values={values} onChange={setValues} errors={byField} withEmail />
        <div className="actions">
          <button type="submit" className="button primary" disabled={busy}>
            {busy ? 'Creating…' : 'Create user'}
          </button>
          <Link to="/users" className="button">
            Cancel
          </Link>
        </div>
      </form>
    </>
  );
}
