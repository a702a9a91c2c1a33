import { AppError } from '@secsvc/shared';
import { generateSessionToken, hashSessionToken } from '../domain/sessions';
import { SessionsService } from './sessions';
import { fakeAuthFailures, fakeCall, FakeDatabase, fakeSamlSubjects, FakeSessions, FakeUsers, keyCall } from './testing/fakes';

const SECRET = 's'.repeat(40);

function setup() {
  const db = new FakeDatabase();
  const sessions = new FakeSessions();
  const users = new FakeUsers();
  const samlSessions = fakeSamlSubjects();
  const authEvents = fakeAuthFailures();
  const service = new SessionsService({ db, sessions, users, samlSessions, outbox: db, serverSecret: SECRET, authEvents });
  const ada = users.add({ id: 'user_ada', email: 'ada@example.com', roles: ['role_admin'] });
  const bob = users.add({ id: 'user_bob', email: 'bob@example.com' });
  return { db, sessions, users, samlSessions, authEvents, service, ada, bob };
}

async function refusal(p: Promise<unknown>): Promise<AppError> {
  const err = await p.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(AppError);
  return err as AppError;
}

const userCall = (userId: string) => fakeCall({ 'x-actor-id': userId, 'x-actor-type': 'user', 'x-auth-method': 'session' });
const open = (service: SessionsService, userId = 'user_ada', over = {}) =>
  service.create('live', { userId, expiresInSeconds: 3600, metadataJson: '', ...over }, keyCall('key_app'));

describe('SessionsService: opening sessions', () => {
  it('opens a session, stores only the token hash, and records user.login by the user, made by the key', async () => {
    const { db, sessions, service } = setup();
    const { row, token } = await open(service, 'user_ada', { metadataJson: '{"device":"phone"}' });
    expect(token).toMatch(/^sst_/);
    expect(row).toMatchObject({ environment: 'live', user_id: 'user_ada', metadata: '{"device":"phone"}' });
    expect(sessions.rows.get(row.id)!.token_hash.equals(hashSessionToken(token, SECRET))).toBe(true);
    expect(row.expires_at.getTime() - row.created_at.getTime()).toBe(3600_000);
    expect(db.events).toEqual([
      expect.objectContaining({
        type: 'user.login',
        environment: 'live',
        actor: { id: 'user_ada', email: 'ada@example.com', type: 'user' },
        target: { id: row.id, type: 'session' },
        result: 'success',
        metadata: { userId: 'user_ada', authMethod: 'secret', apiKeyId: 'key_app' },
      }),
    ]);
  });

  it('refuses lifetimes outside 1m..30d, bad metadata and unknown users, opening nothing', async () => {
    const { db, sessions, service } = setup();
    for (const expiresInSeconds of [59, 30 * 86_400 + 1, 90.5]) expect((await refusal(open(service, 'user_ada', { expiresInSeconds }))).details[0]!.field).toBe('expiresIn');
    expect((await refusal(open(service, 'user_ada', { metadataJson: '[1]' }))).details[0]!.field).toBe('metadata');
    const unknown = await refusal(open(service, 'user_nobody'));
    expect(unknown.code).toBe('not_found');
    expect(unknown.details).toEqual([{ field: 'userId', message: 'no such user' }]);
    expect(sessions.rows.size).toBe(0);
    expect(db.events).toEqual([]);
  });
});

describe('SessionsService: checking tokens', () => {
  it('verifies an active token of the environment, with its user', async () => {
    const { service } = setup();
    const { row, token } = await open(service);
    expect(await service.verify('live', token)).toMatchObject({ session: { id: row.id }, user: { id: 'user_ada' } });
    expect(await service.verify('test', token)).toBeUndefined();
    expect(await service.verify('live', 'sst_garbage')).toBeUndefined();
    expect(await service.verify('live', generateSessionToken())).toBeUndefined();
  });

  it('does not verify a session whose user is gone, nor an expired one', async () => {
    const { sessions, users, service } = setup();
    const a = await open(service);
    users.rows.delete('user_ada');
    expect(await service.verify('live', a.token)).toBeUndefined();
    const b = await open(service, 'user_bob');
    sessions.rows.get(b.row.id)!.expires_at = new Date(Date.now() - 1);
    expect(await service.verify('live', b.token)).toBeUndefined();
  });

  it("authenticates the gateway's session token in any environment; refusals are 401 with auth.failed", async () => {
    const { authEvents, service } = setup();
    const { token } = await open(service);
    expect((await service.authenticate(token, fakeCall())).user.roles).toEqual(['role_admin']);
    for (const t of ['nope', generateSessionToken()]) {
      const err = await refusal(service.authenticate(t, fakeCall()));
      expect(err).toMatchObject({ code: 'unauthorized', message: 'Invalid or expired session token' });
    }
    expect(authEvents.refused).toEqual([
      { credential: 'session', prefix: 'sst_', reason: 'malformed' },
      { credential: 'session', prefix: 'sst_', reason: 'unknown_or_ended' },
    ]);
  });
});

describe('SessionsService: ending sessions', () => {
  it('a logout by the application key: user.logout with the user as actor and the key in metadata; then revoked=false', async () => {
    const { db, service } = setup();
    const { row, token } = await open(service);
    expect(await service.revoke('live', token, keyCall('key_app'))).toEqual({ revoked: true, saml: undefined });
    expect(db.eventsOf('user.logout')).toEqual([
      expect.objectContaining({ actor: { id: 'user_ada', type: 'user' }, target: { id: row.id, type: 'session' }, metadata: { userId: 'user_ada', authMethod: 'secret', apiKeyId: 'key_app' } }),
    ]);
    expect(await service.revoke('live', token, keyCall())).toEqual({ revoked: false, saml: undefined });
    expect(await service.revoke('live', 'not-a-token', keyCall())).toEqual({ revoked: false, saml: undefined });
    expect(db.eventsOf('user.logout')).toHaveLength(1);
  });

  it('the holder ending their own session is a logout; another user ending it is session.revoked by that user', async () => {
    const { db, service } = setup();
    const own = await open(service);
    await service.revoke('live', own.token, userCall('user_ada'));
    expect(db.eventsOf('user.logout')[0]).toMatchObject({ actor: { id: 'user_ada', type: 'user' }, metadata: { authMethod: 'session', callerUserId: 'user_ada' } });
    const other = await open(service);
    await service.revoke('live', other.token, userCall('user_bob'));
    expect(db.eventsOf('session.revoked')).toEqual([
      expect.objectContaining({ actor: expect.objectContaining({ id: 'user_bob', type: 'user' }), target: { id: other.row.id, type: 'session' }, metadata: { userId: 'user_ada', authMethod: 'session' } }),
    ]);
  });

  it('names the SAML subject of a session a SAML login opened (for single logout)', async () => {
    const { samlSessions, service } = setup();
    const { row, token } = await open(service);
    samlSessions.subjects[row.id] = { connectionId: 'sso_1', nameId: 'ada@corp', nameIdFormat: 'email', sessionIndex: 'idx1' };
    expect((await service.revoke('live', token, keyCall())).saml).toEqual(samlSessions.subjects[row.id]);
  });

  it("lists and ends every active session of a user, with session.revoked for each; unknown users are not found", async () => {
    const { db, service } = setup();
    const a = await open(service);
    const b = await open(service);
    await open(service, 'user_bob');
    expect((await service.listOfUser('live', 'user_ada')).map((s) => s.id)).toEqual([b.row.id, a.row.id]);
    expect(await service.revokeAllOfUser('live', 'user_ada', keyCall())).toBe(2);
    expect(db.eventsOf('session.revoked').map((e) => e.target!.id).sort()).toEqual([a.row.id, b.row.id].sort());
    expect(await service.listOfUser('live', 'user_ada')).toEqual([]);
    expect((await service.listOfUser('live', 'user_bob')).length).toBe(1);
    expect((await refusal(service.listOfUser('live', 'user_nobody'))).code).toBe('not_found');
    expect((await refusal(service.revokeAllOfUser('test', 'user_ada', keyCall()))).code).toBe('not_found');
  });

  it('ends one session of a user by its id, and no other user\'s; an ended or unknown one is not found', async () => {
    const { db, service } = setup();
    const a = await open(service);
    const b = await open(service);
    const bob = await open(service, 'user_bob');
    expect((await refusal(service.revokeAllOfUser('live', 'user_ada', keyCall(), bob.row.id))).code).toBe('not_found');
    expect(await service.revokeAllOfUser('live', 'user_ada', keyCall(), a.row.id)).toBe(1);
    expect(db.eventsOf('session.revoked').map((e) => e.target!.id)).toEqual([a.row.id]);
    expect((await service.listOfUser('live', 'user_ada')).map((s) => s.id)).toEqual([b.row.id]);
    expect((await refusal(service.revokeAllOfUser('live', 'user_ada', keyCall(), a.row.id))).code).toBe('not_found');
    expect((await service.listOfUser('live', 'user_bob')).length).toBe(1);
  });
});
