import { isFailure } from '../domain/oauth';
import { OAuthService, type OAuthDeps } from './oauth';
import { OAuthClientsService } from './oauth-clients';
import { fakeCall, FakeDatabase, FakeOAuthClients, FakePasswords, FakeUsers, keyCall } from './testing/fakes';

const SECRET = 'o'.repeat(40);
const unused = new Proxy({}, { get: (_t, name) => () => Promise.reject(new Error(`not expected here: ${String(name)}`)) }) as never;

/** The authorization server with only what client authentication uses (every other port throws). */
function setup() {
  const db = new FakeDatabase();
  const clients = new FakeOAuthClients();
  const throttle = new FakePasswords(new FakeUsers());
  const oauth = new OAuthService({
    db,
    clients,
    throttle,
    codes: unused,
    grants: unused,
    refreshTokens: unused,
    consents: unused,
    sessions: unused,
    users: unused,
    apiKeys: unused,
    keys: unused,
    outbox: db,
    config: { SERVER_SECRET: SECRET, ISSUER: 'https://auth.example.com', JWT_AUDIENCE: 'secsvc', ACCESS_TOKEN_TTL_SECONDS: 900, OAUTH_REFRESH_TOKEN_TTL_SECONDS: 86_400 },
  } satisfies OAuthDeps);
  const registry = new OAuthClientsService({ db, clients, outbox: db, serverSecret: SECRET });
  const register = (type: string) => registry.create('live', { name: 'App', type, redirectUris: ['https://app.example.com/cb'], scopes: ['openid'], firstParty: false }, keyCall());
  return { throttle, oauth, register };
}

const from = (ip: string) => fakeCall({ 'x-client-ip': ip });

describe('OAuthService: client authentication', () => {
  it('accepts a confidential client by its secret and a public client by its id alone', async () => {
    const { oauth, register } = setup();
    const confidential = await register('confidential');
    const pub = await register('public');
    expect(await oauth.authenticateClient({ clientId: confidential.row.id, clientSecret: confidential.secret, clientAuthMethod: 'client_secret_basic' }, from('10.0.0.1'))).toMatchObject({ id: confidential.row.id });
    expect(await oauth.authenticateClient({ clientId: pub.row.id, clientSecret: '', clientAuthMethod: 'none' }, from('10.0.0.1'))).toMatchObject({ id: pub.row.id });
  });

  it('refuses with 401 invalid_client, counting each failure per client and ip', async () => {
    const { throttle, oauth, register } = setup();
    const confidential = await register('confidential');
    const pub = await register('public');
    const refusals = [
      await oauth.authenticateClient({ clientId: '', clientSecret: '', clientAuthMethod: 'client_secret_basic' }, from('10.0.0.1')),
      await oauth.authenticateClient({ clientId: 'cli_00000000000000000000000000', clientSecret: 'x', clientAuthMethod: 'client_secret_basic' }, from('10.0.0.2')),
      await oauth.authenticateClient({ clientId: pub.row.id, clientSecret: 'ocs_x', clientAuthMethod: 'client_secret_post' }, from('10.0.0.3')),
      await oauth.authenticateClient({ clientId: confidential.row.id, clientSecret: '', clientAuthMethod: 'none' }, from('10.0.0.4')),
      await oauth.authenticateClient({ clientId: confidential.row.id, clientSecret: 'ocs_wrong', clientAuthMethod: 'client_secret_basic' }, from('10.0.0.5')),
    ];
    expect(refusals.map((r) => isFailure(r) && [r.error, r.status])).toEqual(Array(5).fill(['invalid_client', 401]));
    expect(throttle.failed.map((f) => f.email)).toEqual(['oauth-client:', 'oauth-client:cli_00000000000000000000000000', `oauth-client:${pub.row.id}`, `oauth-client:${confidential.row.id}`, `oauth-client:${confidential.row.id}`]);
  });

  it('answers 429 past 5 failures per client, yet always accepts the right secret', async () => {
    const { oauth, register } = setup();
    const { row, secret } = await register('confidential');
    const wrong = () => oauth.authenticateClient({ clientId: row.id, clientSecret: 'ocs_wrong', clientAuthMethod: 'client_secret_basic' }, from('10.0.0.9'));
    for (let i = 0; i < 5; i++) expect(await wrong()).toMatchObject({ error: 'invalid_client' });
    expect(await wrong()).toMatchObject({ error: 'temporarily_unavailable', status: 429, retryAfterSeconds: 900 });
    expect(await oauth.authenticateClient({ clientId: row.id, clientSecret: secret, clientAuthMethod: 'client_secret_post' }, from('10.0.0.9'))).toMatchObject({ id: row.id });
  });
});
