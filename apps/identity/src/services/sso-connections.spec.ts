import { AppError } from '@secsvc/shared';
import { SsoConnectionsService, type SsoConnectionInput } from './sso-connections';
import { FakeDatabase, FakeSsoConnections, keyCall } from './testing/fakes';

function setup() {
  const db = new FakeDatabase();
  const connections = new FakeSsoConnections();
  return { db, connections, service: new SsoConnectionsService({ db, connections, outbox: db, serverSecret: 'c'.repeat(40) }) };
}

async function refusal(p: Promise<unknown>): Promise<AppError> {
  const err = await p.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(AppError);
  return err as AppError;
}

const fields = (over: Partial<SsoConnectionInput> = {}): SsoConnectionInput => ({
  name: ' Corp ',
  idpMetadataXml: '<EntityDescriptor/>',
  idpEntityId: 'https://idp.corp.example.com',
  idpSsoUrl: 'https://idp.corp.example.com/sso',
  idpCertificates: ['MIIC...'],
  domains: ['corp.example.com'],
  defaultRoles: ['role_member'],
  attributeMappingJson: '{"name":"displayName","email":"mail"}',
  allowIdpInitiated: false,
  initiateLoginUrl: '',
  allowSha1Signatures: false,
  requireMfa: false,
  ...over,
});

describe('SsoConnectionsService', () => {
  it('creates a connection with its attribute mapping as canonical JSON and sso_connection.created', async () => {
    const { db, service } = setup();
    const row = await service.create('live', fields(), keyCall('key_admin'));
    expect(row).toMatchObject({ name: 'Corp', domains: ['corp.example.com'], attribute_mapping: '{"email":"mail","name":"displayName"}' });
    expect(db.events).toEqual([
      expect.objectContaining({ type: 'sso_connection.created', target: { id: row.id, type: 'sso_connection' }, metadata: { idpEntityId: 'https://idp.corp.example.com' } }),
    ]);
  });

  it('refuses a missing body, invalid fields, and a domain another connection of the environment holds', async () => {
    const { db, service } = setup();
    expect((await refusal(service.create('live', undefined, keyCall()))).details[0]!.field).toBe('(body)');
    expect((await refusal(service.create('live', fields({ defaultRoles: ['bad'] }), keyCall()))).details[0]!.field).toBe('defaultRoles[0]');
    const first = await service.create('live', fields(), keyCall());
    const taken = await refusal(service.create('live', fields({ domains: ['other.example.com', 'corp.example.com'] }), keyCall()));
    expect(taken.code).toBe('conflict');
    expect(taken.details).toEqual([{ field: 'domains', message: `corp.example.com is used by ${first.id}` }]);
    // another environment is another namespace
    await service.create('test', fields(), keyCall());
    expect(db.eventsOf('sso_connection.created')).toHaveLength(2);
  });

  it('finds the connection of an email domain (any case) and gets one in any environment when asked', async () => {
    const { service } = setup();
    const row = await service.create('test', fields(), keyCall());
    expect((await service.findByDomain('test', 'CORP.example.com')).id).toBe(row.id);
    expect((await refusal(service.findByDomain('live', 'corp.example.com'))).code).toBe('not_found');
    expect((await service.get(null, row.id)).id).toBe(row.id);
    expect((await refusal(service.get('live', row.id))).code).toBe('not_found');
  });

  it('updates the fields given (its own domains are no conflict) and names them in sso_connection.updated', async () => {
    const { db, service } = setup();
    const row = await service.create('live', fields(), keyCall());
    const updated = await service.update('live', row.id, { name: ' New ', domains: ['corp.example.com', 'new.example.com'], attributeMappingJson: '{}' }, keyCall());
    expect(updated).toMatchObject({ name: 'New', domains: ['corp.example.com', 'new.example.com'], attribute_mapping: '{}' });
    expect(db.eventsOf('sso_connection.updated')[0]!.metadata).toEqual({ idpEntityId: 'https://idp.corp.example.com', changed: ['name', 'domains', 'attributeMapping'] });
    expect((await refusal(service.update('live', 'sso_nope', { name: 'x' }, keyCall()))).code).toBe('not_found');
  });

  it('deletes a connection with sso_connection.deleted; deleting it again is not found', async () => {
    const { db, service } = setup();
    const row = await service.create('live', fields(), keyCall());
    await service.delete('live', row.id, keyCall());
    expect(db.eventsOf('sso_connection.deleted')).toEqual([expect.objectContaining({ target: { id: row.id, type: 'sso_connection' } })]);
    expect((await refusal(service.delete('live', row.id, keyCall()))).code).toBe('not_found');
  });
});
