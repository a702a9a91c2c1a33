import type { FieldDetail } from '../../api/errors';
import { Field, SelectField, type Option } from '../../components/ui';
import type { PolicyFormValues } from './policy-form';

const EFFECTS: Option<PolicyFormValues['effect']>[] = [
  { value: 'allow', label: 'allow' },
  { value: 'deny', label: 'deny' },
];

const CONDITIONS_HINT = 'A JSON object; {} for none. E.g. {"ip": {"allowlist": ["10.0.0.0/8"]}, "mfa": {"maxAgeSeconds": 900}}';

/** The inputs of a policy, each with the API's messages about it (and the JSON parser's about the conditions). */
export function PolicyFields({ values, onChange, errors }: { values: PolicyFormValues; onChange: (v: PolicyFormValues) => void; errors: Map<string, FieldDetail[]> }) {
  const set = (k: keyof PolicyFormValues) => (e: { target: { value: string } }) => onChange({ ...values, [k]: e.target.value });
  return (
    <>
      <Field label="Name" errors={errors.get('name')}>
        {(p) => <input {...p} name="name" type="text" autoComplete="off" required value={values.name} onChange={set('name')} />}
      </Field>
      <Field label="Description" hint="Optional" errors={errors.get('description')}>
        {(p) => <input {...p} name="description" type="text" autoComplete="off" value={values.description} onChange={set('description')} />}
      </Field>
      <SelectField label="Effect" hint="A matching deny wins over any allow" errors={errors.get('effect')} name="effect" value={values.effect} options={EFFECTS} onChange={(effect) => onChange({ ...values, effect })} />
      <Field label="Principals" hint="One a line: role:<name>, user:<id>, user:${self} or *" errors={errors.get('principals')}>
        {(p) => <textarea {...p} name="principals" rows={3} spellCheck={false} className="code" value={values.principals} onChange={set('principals')} />}
      </Field>
      <Field label="Actions" hint="One a line: read, create, update, delete, simulate… or *" errors={errors.get('actions')}>
        {(p) => <textarea {...p} name="actions" rows={3} spellCheck={false} className="code" value={values.actions} onChange={set('actions')} />}
      </Field>
      <Field label="Resources" hint="One a line: a path (/users/${self}, /logs/* for anything below /logs) or *" errors={errors.get('resources')}>
        {(p) => <textarea {...p} name="resources" rows={3} spellCheck={false} className="code" value={values.resources} onChange={set('resources')} />}
      </Field>
      <Field label="Conditions (JSON)" hint={CONDITIONS_HINT} errors={errors.get('conditions')}>
        {(p) => <textarea {...p} name="conditions" rows={5} spellCheck={false} className="code" value={values.conditions} onChange={set('conditions')} />}
      </Field>
    </>
  );
}
