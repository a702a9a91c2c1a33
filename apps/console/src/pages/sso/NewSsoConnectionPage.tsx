import { useState, type FormEvent } from 'react';
import type { SecsvcClient } from '@secsvc/client';
import { splitDetails, unwrap } from '../../api/errors';
import { ErrorMessage, Link } from '../../components/ui';
import { navigate } from '../../router';
import { ConnectionFields, useMetadataProblem } from './ConnectionFields';
import { CONNECTION_FIELDS, createBody, EMPTY_CONNECTION, type ConnectionFormValues } from './sso';

export function NewSsoConnectionPage({ api }: { api: SecsvcClient }) {
  const [values, setValues] = useState<ConnectionFormValues>(EMPTY_CONNECTION);
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  /** The metadata's problem shows once something was typed, or after a first attempt. */
  const [tried, setTried] = useState(false);
  const problem = useMetadataProblem(values.metadata, true);
  const { byField, rest } = splitDetails(error, CONNECTION_FIELDS);
  if (problem && (tried || values.metadata.trim())) byField.set('idpMetadataXml', [{ field: 'idpMetadataXml', message: problem }]);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setTried(true);
    if (problem) return;
    setBusy(true);
    setError(undefined);
    try {
      const created = unwrap(await api.POST('/v1/sso/connections', { body: createBody(values) })).data;
      navigate(`/sso/${created.id}?created=1`);
    } catch (err) {
      setError(err);
      setBusy(false);
    }
  };
  return (
    <>
      <p className="crumbs">
        <Link to="/sso">SSO connections</Link> / New SSO connection
      </p>
      <h1>New SSO connection</h1>
      {error ? <ErrorMessage error={error} extra={rest} title="The connection was not created" /> : null}
      <form className="form settings-form" onSubmit={submit} noValidate>
        <ConnectionFields values={values} onChange={setValues} errors={byField} creating />
        <div className="actions">
          <button type="submit" className="button primary" disabled={busy}>
            {busy ? 'Creating…' : 'Create connection'}
          </button>
          <Link to="/sso" className="button">
            Cancel
          </Link>
        </div>
      </form>
    </>
  );
}
