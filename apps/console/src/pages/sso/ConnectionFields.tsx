import { useId, useMemo, useState, type ChangeEvent } from 'react';
import type { FieldDetail } from '../../api/errors';
import { Checkbox } from '../../components/Choices';
import { Field } from '../../components/ui';
import { metadataProblem, type ConnectionFormValues } from './sso';

/**
 * What the form knows is wrong with the metadata before sending it. (Not the browser's DOMParser: Chromium marks
 * a parse error up with an inline style, which the console's CSP refuses and reports; the API names that fault.)
 */
export function useMetadataProblem(xml: string, required: boolean): string | undefined {
  return useMemo(() => metadataProblem(xml, required), [xml, required]);
}

/** The inputs of a connection, each with the API's messages about it (and the metadata's first look while typing). */
export function ConnectionFields({ values, onChange, errors, creating }: { values: ConnectionFormValues; onChange: (v: ConnectionFormValues) => void; errors: Map<string, FieldDetail[]>; creating: boolean }) {
  const set = <K extends keyof ConnectionFormValues>(k: K, v: ConnectionFormValues[K]) => onChange({ ...values, [k]: v });
  const text = (k: 'name' | 'domains' | 'metadata' | 'defaultRoles' | 'emailAttribute' | 'nameAttribute' | 'initiateLoginUrl') => (e: { target: { value: string } }) => set(k, e.target.value);
  const fileId = useId();
  const [fileError, setFileError] = useState<string>();
  const load = (e: ChangeEvent<HTMLInputElement>) => {
    const file = e.target.files?.[0];
    e.target.value = '';
    if (!file) return;
    file.text().then(
      (xml) => {
        setFileError(undefined);
        set('metadata', xml);
      },
      () => setFileError(`${file.name} could not be read`),
    );
  };
  const mapping = [...(errors.get('attributeMapping') ?? [])];
  return (
    <>
      <Field label="Name" hint="The identity provider, as administrators know it" errors={errors.get('name')}>
        {(p) => <input {...p} name="name" type="text" autoComplete="off" required value={values.name} onChange={text('name')} />}
      </Field>
      <Field label="Email domains" hint="The domains the IdP speaks for (lower case, separated by commas or spaces): an assertion naming another domain is refused" errors={errors.get('domains')}>
        {(p) => <input {...p} name="domains" type="text" autoComplete="off" spellCheck={false} required value={values.domains} onChange={text('domains')} />}
      </Field>
      <Field
        label="IdP metadata (XML)"
        hint={
          creating
            ? 'The identity provider’s SAML metadata document: paste it, or load its file below. It must name a signing certificate and an HTTP-Redirect SSO service.'
            : 'Empty keeps the current metadata; paste or load a new document to replace it (after an IdP certificate change).'
        }
        errors={errors.get('idpMetadataXml')}
      >
        {(p) => <textarea {...p} name="idpMetadataXml" rows={8} spellCheck={false} className="code" value={values.metadata} onChange={text('metadata')} />}
      </Field>
      <div className="field file-field">
        <label htmlFor={fileId}>Load the metadata from a file</label>
        <input id={fileId} type="file" accept=".xml,application/xml,text/xml,application/samlmetadata+xml" onChange={load} aria-describedby={fileError ? `${fileId}-error` : undefined} />
        {fileError ? (
          <p id={`${fileId}-error`} className="field-errors" role="alert">
            {fileError}
          </p>
        ) : null}
      </div>
      <Field label="Default roles" hint="role_<name> of users created at their first login, separated by commas or spaces; empty for none" errors={errors.get('defaultRoles')}>
        {(p) => <input {...p} name="defaultRoles" type="text" autoComplete="off" spellCheck={false} value={values.defaultRoles} onChange={text('defaultRoles')} />}
      </Field>
      <fieldset className="choices attribute-mapping">
        <legend>Attribute mapping</legend>
        <p className="hint">The assertion attributes with the user’s email and name; empty: the NameID is the email.</p>
        <Field label="Email attribute" errors={mapping.filter((d) => d.field !== 'attributeMapping.name')}>
          {(p) => <input {...p} name="attributeMapping.email" type="text" autoComplete="off" spellCheck={false} value={values.emailAttribute} onChange={text('emailAttribute')} />}
        </Field>
        <Field label="Name attribute" errors={mapping.filter((d) => d.field === 'attributeMapping.name')}>
          {(p) => <input {...p} name="attributeMapping.name" type="text" autoComplete="off" spellCheck={false} value={values.nameAttribute} onChange={text('nameAttribute')} />}
        </Field>
      </fieldset>
      <Checkbox
        name="requireMfa"
        label="Require MFA"
        hint="When the assertion does not say the IdP did MFA, the user’s own second factor is asked for here before a session opens"
        checked={values.requireMfa}
        onChange={(v) => set('requireMfa', v)}
        errors={errors.get('requireMfa')}
      />
      <Checkbox
        name="allowIdpInitiated"
        label="Allow IdP-initiated logins"
        hint="Accept responses the service did not ask for (a tile on the IdP’s dashboard); each assertion is still used once"
        checked={values.allowIdpInitiated}
        onChange={(v) => set('allowIdpInitiated', v)}
        errors={errors.get('allowIdpInitiated')}
      />
      <Field label="Initiate login URL" hint="After an IdP-initiated login the browser goes here (the app’s initiate_login_uri); empty: the ACS answers JSON" errors={errors.get('initiateLoginUrl')}>
        {(p) => <input {...p} name="initiateLoginUrl" type="url" autoComplete="off" spellCheck={false} value={values.initiateLoginUrl} onChange={text('initiateLoginUrl')} />}
      </Field>
      <Checkbox
        name="allowSha1Signatures"
        label="Accept SHA-1 signatures"
        hint="Only for a legacy IdP that cannot sign with SHA-256; each use is logged"
        checked={values.allowSha1Signatures}
        onChange={(v) => set('allowSha1Signatures', v)}
        errors={errors.get('allowSha1Signatures')}
      />
    </>
  );
}
