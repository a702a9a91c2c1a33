import { AppError } from '@secsvc/shared';
import { cleanClassRefs, emailDomain, idpDidMfa, MFA_AUTHN_CONTEXT_CLASSES, parseAttributeMapping, validateConnectionFields } from './sso';

const fieldsOf = (fn: () => unknown): string[] => {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    return (err as AppError).details.map((d) => d.field);
  }
  throw new Error('expected a refusal');
};

describe('SSO connection rules', () => {
  it('takes the lower-cased domain after the last @', () => {
    expect(emailDomain('Ada@Corp.Example.com')).toBe('corp.example.com');
    expect(emailDomain('"a@b"@evil.example.org')).toBe('evil.example.org');
    expect(emailDomain('no-at-sign')).toBe('');
  });

  it('returns the attribute mapping as canonical JSON and refuses unknown keys or bad JSON', () => {
    expect(validateConnectionFields({ attributeMappingJson: '{"name":"displayName","email":"mail"}' })).toBe('{"email":"mail","name":"displayName"}');
    expect(parseAttributeMapping('')).toEqual({});
    expect(fieldsOf(() => parseAttributeMapping('{"role":"x"}'))).toEqual(['attributeMapping.role']);
    expect(fieldsOf(() => parseAttributeMapping('not json'))).toEqual(['attributeMapping']);
  });

  it('names each faulty field', () => {
    expect(fieldsOf(() => validateConnectionFields({ domains: ['example.com', 'example.com'] }))).toEqual(['domains']);
    expect(fieldsOf(() => validateConnectionFields({ domains: ['EXAMPLE.com'] }))).toEqual(['domains[0]']);
    expect(fieldsOf(() => validateConnectionFields({ defaultRoles: ['role_ok', 'bad'] }))).toEqual(['defaultRoles[1]']);
    expect(fieldsOf(() => validateConnectionFields({ idpCertificates: [] }))).toEqual(['idpMetadataXml']);
    expect(validateConnectionFields({ name: 'Corp', domains: ['corp.example.com'], defaultRoles: [] })).toBeUndefined();
  });
});

describe('whether the IdP did MFA (AuthnContextClassRef)', () => {
  it('counts the MFA classes, Microsoft\'s multipleauthn and the REFEDS MFA profile', () => {
    for (const ref of MFA_AUTHN_CONTEXT_CLASSES) expect(idpDidMfa([ref])).toBe(true);
    expect(idpDidMfa(['urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport', 'https://refeds.org/profile/mfa'])).toBe(true);
    expect(idpDidMfa(['  http://schemas.microsoft.com/claims/multipleauthn\n'])).toBe(true);
  });

  it('does not count single-factor classes, near misses, or nothing', () => {
    expect(idpDidMfa([])).toBe(false);
    expect(idpDidMfa(['urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport', 'urn:oasis:names:tc:SAML:2.0:ac:classes:unspecified'])).toBe(false);
    expect(idpDidMfa(['https://refeds.org/profile/sfa', 'HTTPS://REFEDS.ORG/PROFILE/MFA', 'https://refeds.org/profile/mfa/'])).toBe(false);
    // wiaormultiauthn: Windows integrated authentication OR MFA, so not necessarily MFA.
    expect(idpDidMfa(['http://schemas.microsoft.com/claims/wiaormultiauthn'])).toBe(false);
  });

  it('takes the classes a connection lists instead of the defaults', () => {
    expect(idpDidMfa(['urn:okta:loa:2fa:any'])).toBe(false);
    expect(idpDidMfa(['urn:okta:loa:2fa:any'], ['urn:okta:loa:2fa:any'])).toBe(true);
    expect(idpDidMfa(['https://refeds.org/profile/mfa'], ['urn:okta:loa:2fa:any'])).toBe(false);
  });

  it('keeps at most 20 trimmed, distinct, non-empty references of at most 1024 characters', () => {
    expect(cleanClassRefs([' a ', 'a', '', 'x'.repeat(1025), 'b'])).toEqual(['a', 'b']);
    expect(cleanClassRefs(Array.from({ length: 30 }, (_, i) => `r${i}`))).toHaveLength(20);
  });
});
