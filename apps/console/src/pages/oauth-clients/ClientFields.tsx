import type { FieldDetail } from '../../api/errors';
import { Checkbox, ChoiceGroup } from '../../components/Choices';
import { Field } from '../../components/ui';
import { MAX_REDIRECT_URIS, scopeChoices, type ClientType } from './clients';

export interface ClientFormValues {
  name: string;
  type: ClientType;
  /** One URI a line. */
  redirectUris: string;
  scopes: string[];
  firstParty: boolean;
}

const TYPES = [
  { value: 'confidential' as const, label: 'Confidential', hint: 'a server that keeps a client secret' },
  { value: 'public' as const, label: 'Public', hint: 'a browser or mobile app: no secret, PKCE' },
];

/** The inputs of a client (the type only when registering: it cannot change), with the API's messages about each. */
export function ClientFields({ values, onChange, errors, withType, heldScopes = [] }: { values: ClientFormValues; onChange: (v: ClientFormValues) => void; errors: Map<string, FieldDetail[]>; withType: boolean; heldScopes?: string[] }) {
  const set = <K extends keyof ClientFormValues>(k: K, v: ClientFormValues[K]) => onChange({ ...values, [k]: v });
  return (
    <>
      <Field label="Name" hint="Shown on the consent page" errors={errors.get('name')}>
        {(p) => <input {...p} name="name" type="text" autoComplete="off" required maxLength={100} value={values.name} onChange={(e) => set('name', e.target.value)} />}
      </Field>
      {withType ? <ChoiceGroup legend="Type" name="type" choices={TYPES} value={values.type} onChange={(v) => set('type', v)} errors={errors.get('type')} /> : null}
      <Field
        label="Redirect URIs"
        hint={`One a line, at most ${MAX_REDIRECT_URIS}; matched exactly. https, or http for 127.0.0.1, [::1] and localhost; no fragment.${values.type === 'public' ? ' A public client needs one.' : ''}`}
        errors={errors.get('redirectUris')}
      >
        {(p) => <textarea {...p} name="redirectUris" rows={4} spellCheck={false} className="code" value={values.redirectUris} onChange={(e) => set('redirectUris', e.target.value)} />}
      </Field>
      <ChoiceGroup
        multiple
        className="scope-choices"
        legend="Scopes"
        hint="What the client may ask for; a token of the console can give only scopes it has itself"
        name="scopes"
        choices={scopeChoices([...heldScopes, ...values.scopes])}
        value={values.scopes}
        onChange={(v) => set('scopes', v)}
        errors={errors.get('scopes')}
      />
      <Checkbox
        name="firstParty"
        label="First party"
        hint="The service's own application: users are not asked for consent"
        checked={values.firstParty}
        onChange={(v) => set('firstParty', v)}
        errors={errors.get('firstParty')}
      />
    </>
  );
}
