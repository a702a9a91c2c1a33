import { connectionChanges, createBody, EMPTY_CONNECTION, metadataProblem, valuesOf, type SsoConnection } from './sso';

const METADATA = '<?xml version="1.0"?>\n<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="https://idp.example/"><md:IDPSSODescriptor/></md:EntityDescriptor>';

const connection: SsoConnection = {
  id: 'sso_1',
  name: 'Corp',
  environment: 'live',
  domains: ['corp.example', 'corp.example.org'],
  defaultRoles: ['role_viewer'],
  attributeMapping: { email: 'mail' },
  allowIdpInitiated: false,
  initiateLoginUrl: 'https://app.example/login',
  allowSha1Signatures: false,
  requireMfa: true,
  idp: { entityId: 'https://idp.example/', ssoUrl: 'https://idp.example/sso', certificates: [] },
  sp: { entityId: 'e', metadataUrl: 'm', acsUrl: 'a', loginUrl: 'l', sloUrl: 's' },
  createdAt: '2030-01-01T00:00:00Z',
  updatedAt: '2030-01-01T00:00:00Z',
};

describe('SSO connection pages: pure parts', () => {
  it('looks at the metadata as it is typed: required when creating, XML, no DTD, an EntityDescriptor', () => {
    expect(metadataProblem(METADATA, true)).toBeUndefined();
    expect(metadataProblem('<EntityDescriptor entityID="x"></EntityDescriptor>', true)).toBeUndefined();
    expect(metadataProblem('  ', true)).toMatch(/^is required/);
    expect(metadataProblem('  ', false)).toBeUndefined();
    expect(metadataProblem('https://idp.example/metadata', true)).toMatch(/^is not XML: .*not its URL/);
    expect(metadataProblem('<!DOCTYPE x [<!ENTITY e "x">]><EntityDescriptor/>', true)).toBe('must not have a DTD or entity declaration');
    expect(metadataProblem('<html><body>Sign in</body></html>', true)).toBe('is not SAML metadata: it has no EntityDescriptor');
    expect(metadataProblem(`<EntityDescriptor>${'x'.repeat(256 * 1024)}</EntityDescriptor>`, true)).toMatch(/^must be at most 262144 characters/);
  });

  it('makes the create body from the form: lists split, empty mapping entries and login URL left out', () => {
    const body = createBody({ ...EMPTY_CONNECTION, name: 'Corp', domains: 'corp.example, corp.example.org\n', metadata: `  ${METADATA}\n`, defaultRoles: 'role_a role_b', emailAttribute: ' mail ' });
    expect(body).toEqual({
      name: 'Corp',
      idpMetadataXml: METADATA,
      domains: ['corp.example', 'corp.example.org'],
      defaultRoles: ['role_a', 'role_b'],
      attributeMapping: { email: 'mail' },
      allowIdpInitiated: false,
      allowSha1Signatures: false,
      requireMfa: false,
    });
  });

  it('sends only what an edit changed; empty metadata keeps the stored one; an emptied login URL clears it', () => {
    const same = valuesOf(connection);
    expect(same).toMatchObject({ domains: 'corp.example, corp.example.org', metadata: '', emailAttribute: 'mail', nameAttribute: '', initiateLoginUrl: 'https://app.example/login' });
    expect(connectionChanges(connection, same)).toEqual({});
    expect(connectionChanges(connection, { ...same, domains: 'corp.example', nameAttribute: 'displayName', initiateLoginUrl: '', requireMfa: false, metadata: METADATA })).toEqual({
      idpMetadataXml: METADATA,
      domains: ['corp.example'],
      attributeMapping: { email: 'mail', name: 'displayName' },
      initiateLoginUrl: '',
      requireMfa: false,
    });
    expect(connectionChanges(connection, { ...same, emailAttribute: '' })).toEqual({ attributeMapping: {} });
  });
});
