import { useState, type FormEvent } from 'react';
import type { Schemas, SecsvcClient } from '@secsvc/client';
import { splitDetails, unwrap } from '../../api/errors';
import { ChoiceGroup } from '../../components/Choices';
import { SecretOnce } from '../../components/SecretOnce';
import { ErrorMessage, Field, Link, Notice } from '../../components/ui';
import { formatTime } from '../../forms';
import { KEY_TYPES, PLANS, readExpiry, readRateLimit, type KeyType, type Plan } from './api-keys';

const FIELDS = ['name', 'type', 'plan', 'rateLimit', 'expiresAt'];

interface Values {
  name: string;
  type: KeyType;
  plan: Plan;
  rateLimit: string;
  expiresAt: string;
}

/** The create form; once created, the key's secret (this answer is the only one that has it) and where to go next. */
export function NewApiKeyPage({ api }: { api: SecsvcClient }) {
  const [created, setCreated] = useState<Schemas['ApiKeyCreated']>();
  return (
    <>
      <p className="crumbs">
        <Link to="/api-keys">API keys</Link> / New API key
      </p>
      {created ? <Created apiKey={created} /> : <CreateForm api={api} onCreated={setCreated} />}
    </>
  );
}

function CreateForm({ api, onCreated }: { api: SecsvcClient; onCreated: (key: Schemas['ApiKeyCreated']) => void }) {
  const [values, setValues] = useState<Values>({ name: '', type: 'secret', plan: 'free', rateLimit: '', expiresAt: '' });
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const rateLimit = readRateLimit(values.rateLimit);
  const expiry = readExpiry(values.expiresAt);
  const { byField, rest } = splitDetails(error, FIELDS);
  if (!rateLimit.ok) byField.set('rateLimit', [{ field: 'rateLimit', message: rateLimit.message }]);
  if (!expiry.ok) byField.set('expiresAt', [{ field: 'expiresAt', message: expiry.message }]);
  const set = <K extends keyof Values>(k: K, v: Values[K]) => setValues((old) => ({ ...old, [k]: v }));

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (!rateLimit.ok || !expiry.ok) return;
    setBusy(true);
    setError(undefined);
    try {
      const body = {
        name: values.name,
        type: values.type,
        plan: values.plan,
        ...(values.plan === 'enterprise' && rateLimit.value !== undefined ? { rateLimit: rateLimit.value } : {}),
        ...(expiry.value ? { expiresAt: expiry.value } : {}),
      };
      onCreated(unwrap(await api.POST('/v1/api-keys', { body })).data);
    } catch (err) {
      setError(err);
      setBusy(false);
    }
  };
  return (
    <>
      <h1>New API key</h1>
      {error ? <ErrorMessage error={error} extra={rest} title="The key was not created" /> : null}
      <form className="form settings-form" onSubmit={submit} noValidate>
        <Field label="Name" hint="What uses the key, e.g. “billing service”" errors={byField.get('name')}>
          {(p) => <input {...p} name="name" type="text" autoComplete="off" required maxLength={100} value={values.name} onChange={(e) => set('name', e.target.value)} />}
        </Field>
        <ChoiceGroup legend="Type" name="type" choices={KEY_TYPES} value={values.type} onChange={(v) => set('type', v)} errors={byField.get('type')} />
        <Field label="Plan" hint="The rate limit of the key's requests" errors={byField.get('plan')}>
          {(p) => (
            <select {...p} name="plan" value={values.plan} onChange={(e) => set('plan', e.target.value as Plan)}>
              {PLANS.map((plan) => (
                <option key={plan.value} value={plan.value}>
                  {plan.label}
                </option>
              ))}
            </select>
          )}
        </Field>
        {values.plan === 'enterprise' ? (
          <Field label="Rate limit (requests per minute)" hint="Empty for the plan's default" errors={byField.get('rateLimit')}>
            {(p) => <input {...p} name="rateLimit" type="text" inputMode="numeric" autoComplete="off" value={values.rateLimit} onChange={(e) => set('rateLimit', e.target.value)} />}
          </Field>
        ) : null}
        <Field label="Expires" hint="Your local time; empty for a key that does not expire (rotate keys every 90 days)" errors={byField.get('expiresAt')}>
          {(p) => <input {...p} name="expiresAt" type="datetime-local" value={values.expiresAt} onChange={(e) => set('expiresAt', e.target.value)} />}
        </Field>
        <div className="actions">
          <button type="submit" className="button primary" disabled={busy}>
            {busy ? 'Creating…' : 'Create key'}
          </button>
          <Link to="/api-keys" className="button">
            Cancel
          </Link>
        </div>
      </form>
    </>
  );
}

function Created({ apiKey }: { apiKey: Schemas['ApiKeyCreated'] }) {
  return (
    <>
      <h1>{apiKey.name}</h1>
      <Notice>The {apiKey.type} key was created.</Notice>
      <SecretOnce title="The key's secret" label="API key" what="the API key" value={apiKey.key}>
        <p>
          Use it as <code>Authorization: Bearer &lt;key&gt;</code>. Lists show it as <code>{apiKey.maskedKey}</code>.
        </p>
      </SecretOnce>
      <dl className="facts">
        <div>
          <dt>Id</dt>
          <dd>
            <code>{apiKey.id}</code>
          </dd>
        </div>
        <div>
          <dt>Plan</dt>
          <dd>{apiKey.plan}</dd>
        </div>
        <div>
          <dt>Environment</dt>
          <dd>{apiKey.environment}</dd>
        </div>
        <div>
          <dt>Expires</dt>
          <dd>{apiKey.expiresAt ? formatTime(apiKey.expiresAt) : 'never'}</dd>
        </div>
      </dl>
      <div className="actions">
        <Link to={`/api-keys/${apiKey.id}`} className="button primary">
          I have copied it: go to the key
        </Link>
        <Link to="/api-keys" className="button">
          Back to the API keys
        </Link>
      </div>
    </>
  );
}
