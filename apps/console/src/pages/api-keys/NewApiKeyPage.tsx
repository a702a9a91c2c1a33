import { useState } from 'react';
import type { Schemas, SecsvcClient } from '@secsvc/client';
import { splitDetails, unwrap } from '../../api/errors';
import { ChoiceGroup } from '../../components/Choices';
import { SecretOnce } from '../../components/SecretOnce';
import { ActionForm } from '../../components/ActionForm';
import { Facts } from '../../components/Facts';
import { Crumbs, Field, Link, Notice, SelectField } from '../../components/ui';
import { formatTime } from '../../forms';
import { useAction } from '../../hooks';
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
      <Crumbs trail={[['/api-keys', 'API keys']]}>New API key</Crumbs>
      {created ? <Created apiKey={created} /> : <CreateForm api={api} onCreated={setCreated} />}
    </>
  );
}

function CreateForm({ api, onCreated }: { api: SecsvcClient; onCreated: (key: Schemas['ApiKeyCreated']) => void }) {
  const [values, setValues] = useState<Values>({ name: '', type: 'secret', plan: 'free', rateLimit: '', expiresAt: '' });
  const action = useAction();
  const rateLimit = readRateLimit(values.rateLimit);
  const expiry = readExpiry(values.expiresAt);
  const { byField, rest } = splitDetails(action.error, FIELDS);
  if (!rateLimit.ok) byField.set('rateLimit', [{ field: 'rateLimit', message: rateLimit.message }]);
  if (!expiry.ok) byField.set('expiresAt', [{ field: 'expiresAt', message: expiry.message }]);
  const set = <K extends keyof Values>(k: K, v: Values[K]) => setValues((old) => ({ ...old, [k]: v }));

  const submit = () => {
    if (!rateLimit.ok || !expiry.ok) return;
    const body = {
      name: values.name,
      type: values.type,
      plan: values.plan,
      ...(values.plan === 'enterprise' && rateLimit.value !== undefined ? { rateLimit: rateLimit.value } : {}),
      ...(expiry.value ? { expiresAt: expiry.value } : {}),
    };
    void action.run(async () => onCreated(unwrap(await api.POST('/v1/api-keys', { body })).data));
  };
  return (
    <>
      <h1>New API key</h1>
      <ActionForm
        action={action}
        failedTitle="The key was not created"
        extra={rest}
        className="form settings-form"
        onSubmit={submit}
        submitLabel="Create key"
        busyLabel="Creating…"
        cancelTo="/api-keys"
      >
        <Field label="Name" hint="What uses the key, e.g. “billing service”" errors={byField.get('name')}>
          {(p) => <input {...p} name="name" type="text" autoComplete="off" required maxLength={100} value={values.name} onChange={(e) => set('name', e.target.value)} />}
        </Field>
        <ChoiceGroup legend="Type" name="type" choices={KEY_TYPES} value={values.type} onChange={(v) => set('type', v)} errors={byField.get('type')} />
        <SelectField label="Plan" hint="The rate limit of the key's requests" errors={byField.get('plan')} name="plan" value={values.plan} options={PLANS} onChange={(v) => set('plan', v)} />
        {values.plan === 'enterprise' ? (
          <Field label="Rate limit (requests per minute)" hint="Empty for the plan's default" errors={byField.get('rateLimit')}>
            {(p) => <input {...p} name="rateLimit" type="text" inputMode="numeric" autoComplete="off" value={values.rateLimit} onChange={(e) => set('rateLimit', e.target.value)} />}
          </Field>
        ) : null}
        <Field label="Expires" hint="Your local time; empty for a key that does not expire (rotate keys every 90 days)" errors={byField.get('expiresAt')}>
          {(p) => <input {...p} name="expiresAt" type="datetime-local" value={values.expiresAt} onChange={(e) => set('expiresAt', e.target.value)} />}
        </Field>
      </ActionForm>
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
      <Facts
        items={[
          ['Id', <code>{apiKey.id}</code>],
          ['Plan', apiKey.plan],
          ['Environment', apiKey.environment],
          ['Expires', apiKey.expiresAt ? formatTime(apiKey.expiresAt) : 'never'],
        ]}
      />
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
