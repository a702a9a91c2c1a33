import { AppError } from '@secsvc/shared';
import { FAKE_TRACE_ID, FakeDatabase, FakeUsers, keyCall } from './testing/fakes';
import { UsersService } from './users';

const SECRET = 'u'.repeat(40);

function setup() {
  const db = new FakeDatabase();
  const users = new FakeUsers();
  return { db, users, service: new UsersService({ db, users, outbox: db, serverSecret: SECRET }) };
}

async function refusal(p: Promise<unknown>): Promise<AppError> {
  const err = await p.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(AppError);
  return err as AppError;
}

const input = (email: string, over = {}) => ({ email, name: 'Ada', roles: ['role_member'], metadataJson: '', ...over });

describe('UsersService', () => {
  it('creates a user and writes user.created about it, by the calling key, in the same transaction', async () => {
    const { db, users, service } = setup();
    const row = await service.create('live', input('ada@example.com', { metadataJson: '{"team":"a"}' }), keyCall('key_abc'));
    expect(row).toMatchObject({ environment: 'live', email: 'ada@example.com', name: 'Ada', roles: ['role_member'], metadata: '{"team":"a"}' });
    expect(row.id).toMatch(/^user_[0-9a-z]{26}$/);
    expect(users.rows.has(row.id)).toBe(true);
    expect(db.transactions).toBe(1);
    expect(db.events).toEqual([
      {
        actor: { id: 'key_abc', type: 'api_key', email: undefined, name: undefined },
        context: { ip: '203.0.113.7', userAgent: '' },
        authMethod: 'secret',
        environment: 'live',
        type: 'user.created',
        target: { id: row.id, type: 'user' },
        result: 'success',
        traceId: FAKE_TRACE_ID,
        metadata: undefined,
      },
    ]);
  });

  it('refuses invalid input, naming every field, before any write', async () => {
    const { db, service } = setup();
    const err = await refusal(service.create('live', input('nope', { name: ' ', roles: ['admin'] }), keyCall()));
    expect(err.code).toBe('invalid_request');
    expect(err.details.map((d) => d.field)).toEqual(['email', 'name', 'roles[0]']);
    expect(db.transactions).toBe(0);
    expect(db.events).toEqual([]);
  });

  it('refuses a second user with the same email in the environment (any case): a conflict, and no event', async () => {
    const { db, service } = setup();
    await service.create('live', input('dup@example.com'), keyCall());
    const err = await refusal(service.create('live', input('DUP@example.com'), keyCall()));
    expect(err.code).toBe('conflict');
    expect(err.details).toEqual([{ field: 'email', message: 'already in use' }]);
    expect(db.eventsOf('user.created')).toHaveLength(1);
    // another environment is another namespace
    await service.create('test', input('dup@example.com'), keyCall());
  });

  it('gets users of the environment only', async () => {
    const { service } = setup();
    const row = await service.create('live', input('get@example.com'), keyCall());
    expect((await service.get('live', row.id)).email).toBe('get@example.com');
    expect((await refusal(service.get('test', row.id))).code).toBe('not_found');
  });

  it('updates name and metadata and names the fields changed in user.updated', async () => {
    const { db, service } = setup();
    const row = await service.create('live', input('upd@example.com'), keyCall());
    const updated = await service.update('live', row.id, { name: 'Ada L', metadataJson: '{"a":1}' }, keyCall('key_upd'));
    expect(updated).toMatchObject({ name: 'Ada L', metadata: '{"a":1}' });
    const [event] = db.eventsOf('user.updated');
    expect(event).toMatchObject({ target: { id: row.id, type: 'user' }, actor: { id: 'key_upd' }, metadata: { fields: ['name', 'metadata'] } });
    await service.update('live', row.id, { metadataJson: '{}' }, keyCall());
    expect(db.eventsOf('user.updated')[1]!.metadata).toEqual({ fields: ['metadata'] });
  });

  it('replaces roles (an empty list removes them), refuses bad ones naming each, and names roles in user.updated', async () => {
    const { db, service } = setup();
    const row = await service.create('live', input('roles@example.com'), keyCall());
    const updated = await service.update('live', row.id, { roles: { values: ['role_admin', 'role_billing'] } }, keyCall());
    expect(updated.roles).toEqual(['role_admin', 'role_billing']);
    expect(db.eventsOf('user.updated')[0]!.metadata).toEqual({ fields: ['roles'] });
    expect((await service.update('live', row.id, { roles: { values: [] } }, keyCall())).roles).toEqual([]);
    const err = await refusal(service.update('live', row.id, { name: ' ', roles: { values: ['role_ok', 'Admin!'] } }, keyCall()));
    expect(err.details.map((d) => d.field).sort()).toEqual(['name', 'roles[1]']);
    expect((await refusal(service.update('live', row.id, { roles: { values: ['role_a', 'role_a'] } }, keyCall()))).details).toEqual([{ field: 'roles', message: 'must not contain duplicates' }]);
    expect(db.eventsOf('user.updated')).toHaveLength(2);
  });

  it('refuses an empty update, and an update of an unknown user writes no event', async () => {
    const { db, service } = setup();
    expect((await refusal(service.update('live', 'user_x', {}, keyCall()))).details[0]!.field).toBe('(body)');
    expect((await refusal(service.update('live', 'user_00000000000000000000000000', { name: 'N' }, keyCall()))).code).toBe('not_found');
    expect(db.events).toEqual([]);
  });

  it('deletes a user (user.deleted keeps only its id); deleting it again is not found, without an event', async () => {
    const { db, users, service } = setup();
    const row = await service.create('live', input('del@example.com'), keyCall());
    await service.delete('live', row.id, keyCall());
    expect(users.rows.has(row.id)).toBe(false);
    expect(db.eventsOf('user.deleted')).toEqual([expect.objectContaining({ target: { id: row.id, type: 'user' }, environment: 'live', result: 'success' })]);
    expect((await refusal(service.delete('live', row.id, keyCall()))).code).toBe('not_found');
    expect(db.eventsOf('user.deleted')).toHaveLength(1);
  });

  it('lists newest first in pages, with a cursor bound to the environment', async () => {
    const { service } = setup();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await service.create('live', input(`l${i}@example.com`), keyCall())).id);
    await service.create('test', input('other@example.com'), keyCall());
    const first = await service.list('live', { limit: 2, cursor: '' });
    expect(first.page.map((r) => r.id)).toEqual([ids[4], ids[3]]);
    expect(first.hasMore).toBe(true);
    const rest = await service.list('live', { limit: 100, cursor: first.nextCursor });
    expect(rest.page.map((r) => r.id)).toEqual([ids[2], ids[1], ids[0]]);
    expect(rest).toMatchObject({ hasMore: false, nextCursor: '' });
    expect((await refusal(service.list('test', { limit: 2, cursor: first.nextCursor }))).details[0]!.field).toBe('cursor');
    expect((await refusal(service.list('live', { limit: 101, cursor: '' }))).details[0]!.field).toBe('limit');
  });

  it('searches by part of the email, case-insensitively, page by page', async () => {
    const { service } = setup();
    const ada = (await service.create('live', input('Ada.Lovelace@Example.com'), keyCall())).id;
    await service.create('live', input('grace@example.org'), keyCall());
    const adaBis = (await service.create('live', input('ada.b@example.com'), keyCall())).id;
    await service.create('test', input('ada@example.com'), keyCall());
    const first = await service.list('live', { limit: 1, cursor: '', email: 'ADA' });
    expect(first.page.map((r) => r.id)).toEqual([adaBis]);
    expect((await service.list('live', { limit: 1, cursor: first.nextCursor, email: 'ADA' })).page.map((r) => r.id)).toEqual([ada]);
    expect((await service.list('live', { limit: 10, cursor: '', email: '%' })).page).toEqual([]);
    expect((await service.list('live', { limit: 10, cursor: '', email: '' })).page).toHaveLength(3);
    expect((await refusal(service.list('live', { limit: 10, cursor: '', email: 'x'.repeat(255) }))).details[0]!.field).toBe('email');
  });
});
