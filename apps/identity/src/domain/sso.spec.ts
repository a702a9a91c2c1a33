import { AppError } from '@secsvc/shared';
import { emailDomain, parseAttributeMapping, validateConnectionFields } from './sso';

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
