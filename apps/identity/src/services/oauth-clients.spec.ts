import { AppError } from '@secsvc/shared';
import { hashClientSecret } from '../domain/oauth';
import { OAuthClientsService } from './oauth-clients';
import { FakeDatabase, FakeOAuthClients, keyCall } from './testing/fakes';

const SECRET = 'o'.repeat(40);

function setup() {
  const db = new FakeDatabase();
  const clients = new FakeOAuthClients();
  return { db, clients, service: new OAuthClientsService({ db, clients, outbox: db, serverSecret: SECRET }) };
}

async function refusal(p: Promise<unknown>): Promise<AppError> {
  const err = await p.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(AppError);
  return err as AppError;
}

const app = (over = {}) => ({ name: ' App ', type: 'confidential', redirectUris: ['https://app.example.com/cb'], scopes: ['openid', 'read:users'], firstParty: false, ...over });

describe('OAuthClientsService', () => {
  it('registers a confidential client with a secret shown once and stored as its HMAC', async () => {
    const { db, clients, service } = setup();
    const { row, secret } = await service.create('live', app(), keyCall('key_admin'));
    expect(secret).toMatch(/^ocs_/);
    expect(row).toMatchObject({ name: 'App', type: 'confidential', redirect_uris: ['https://app.example.com/cb'], first_party: false });
    expect(clients.rows.get(row.id)!.secret_hash!.equals(hashClientSecret(secret, SECRET))).toBe(true);
    expect(db.events).toEqual([
      expect.objectContaining({
        type: 'oauth_client.created',
        environment: 'live',
        actor: expect.objectContaining({ id: 'key_admin' }),
        target: { id: row.id, type: 'oauth_client' },
        metadata: { clientType: 'confidential', firstParty: false },
      }),
    ]);
  });

  it('gives a public client no secret, and needs it to have a redirect URI', async () => {
    const { service } = setup();
    expect((await service.create('live', app({ type: 'public' }), keyCall())).secret).toBe('');
    const err = await refusal(service.create('live', app({ type: 'public', redirectUris: [] }), keyCall()));
    expect(err.details).toEqual([{ field: 'redirectUris', message: 'a public client needs at least one redirect URI' }]);
  });

  it('refuses invalid registrations, naming each field, without writing', async () => {
    const { db, service } = setup();
    const err = await refusal(service.create('live', app({ name: '', type: 'other', redirectUris: ['http://evil.example.com/cb'], scopes: ['root'] }), keyCall()));
    expect(err.details.map((d) => d.field)).toEqual(['name', 'type', 'redirectUris[0]', 'scopes[0]']);
    expect(db.transactions).toBe(0);
  });

  it('updates the fields given, checked against the stored type, and names them in oauth_client.updated', async () => {
    const { db, service } = setup();
    const { row } = await service.create('live', app({ type: 'public' }), keyCall());
    expect((await refusal(service.update('live', row.id, { redirectUris: [] }, keyCall()))).details[0]!.field).toBe('redirectUris');
    const updated = await service.update('live', row.id, { name: ' Renamed ', firstParty: true }, keyCall());
    expect(updated).toMatchObject({ name: 'Renamed', first_party: true });
    expect(db.eventsOf('oauth_client.updated')).toEqual([expect.objectContaining({ metadata: { clientType: 'public', changed: ['name', 'firstParty'] } })]);
    expect((await refusal(service.update('test', row.id, { name: 'x' }, keyCall()))).code).toBe('not_found');
  });

  it('deletes a client, counting the grants that ended with it', async () => {
    const { db, clients, service } = setup();
    const { row } = await service.create('live', app(), keyCall());
    clients.activeGrants.set(row.id, 3);
    expect(await service.delete('live', row.id, keyCall())).toBe(3);
    expect(db.eventsOf('oauth_client.deleted')).toEqual([expect.objectContaining({ target: { id: row.id, type: 'oauth_client' }, metadata: { clientType: 'confidential', grantsRevoked: 3 } })]);
    expect((await refusal(service.get('live', row.id))).code).toBe('not_found');
    expect((await refusal(service.delete('live', row.id, keyCall()))).code).toBe('not_found');
  });
});
