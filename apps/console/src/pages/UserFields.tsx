import type { FieldDetail } from '../api/errors';
import { Field } from '../components/ui';

export interface UserFormValues {
  email: string;
  name: string;
  roles: string;
  metadata: string;
}

/** The inputs of a user (email only when creating), each with the API's messages about it. */
export function UserFields({ values, onChange, errors, withEmail }: { values: UserFormValues; onChange: (v: UserFormValues) => void; errors: Map<string, FieldDetail[]>; withEmail: boolean }) {
  const set = (k: keyof UserFormValues) => (e: { target: { value: string } }) => onChange({ ...values, [k]: e.target.value });
  return (
    <>
      {withEmail ? (
        <Field label="Email" errors={errors.get('email')}>
          {(p) => <input {...p} name="email" type="email" autoComplete="off" required value={values.email} onChange={set('email')} />}
        </Field>
      ) : null}
      <Field label="Name" errors={errors.get('name')}>
        {(p) => <input {...p} name="name" type="text" autoComplete="off" required value={values.name} onChange={set('name')} />}
      </Field>
      <Field label="Roles" hint="role_<name>, separated by commas or spaces; empty for none" errors={errors.get('roles')}>
        {(p) => <input {...p} name="roles" type="text" autoComplete="off" spellCheck={false} value={values.roles} onChange={set('roles')} />}
      </Field>
      <Field label="Metadata (JSON)" hint="A JSON object; saving replaces the stored one" errors={errors.get('metadata')}>
        {(p) => <textarea {...p} name="metadata" rows={8} spellCheck={false} className="code" value={values.metadata} onChange={set('metadata')} />}
      </Field>
    </>
  );
}
