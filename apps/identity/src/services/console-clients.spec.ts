import type { PoolClient } from '@secsvc/shared';
import type { OAuthClientRow } from '../repositories/oauth';
import { CONSOLE_SCOPES, ConsoleClientsService, consoleRedirectUri, type ConsoleClientsRepository } from './console-clients';
import { FakeDatabase, FakeOAuthClients } from './testing/fakes';

class FakeConsoleClients implements ConsoleClientsRepository {
  readonly ids = new Map<string, string>();
  locks = 0;
  constructor(private readonly clients: FakeOAuthClients) {}
  async list(): Promise<OAuthClientRow[]> {
    return [...this.ids.values()].map((id) => this.clients.rows.get(id)).filter((r): r is OAuthClientRow => !!r).map((r) => ({ ...r }));
  }
  async set(_db: unknown, environment: string, clientId: string): Promise<void> {
    this.ids.set(environment, clientId);
  }
  async lock(_db: PoolClient): Promise<void> {
    this.locks++;
  }
}

function setup(issuer = 'https://auth.example.com') {
  const db = new FakeDatabase();
  const clients = new FakeOAuthClients();
  const consoleClients = new FakeConsoleClients(clients);
  const logger = { info: jest.fn(), warn: jest.fn() };
  const service = new ConsoleClientsService({ db, clients, consoleClients, issuer, logger: logger as never });
  return { db, clients, consoleClients, logger, service };
}

describe('ConsoleClientsService', () => {
  it('creates one first-party public client per environment, redirecting to <ISSUER>/console/callback, once', async () => {
    const { clients, consoleClients, service } = setup('https://auth.example.com/');
    const first = await service.ensure();
    expect(first.created).toEqual(['live', 'test']);
    expect(consoleClients.locks).toBe(1);
    for (const env of ['live', 'test'] as const) {
      expect(clients.rows.get(first.clients[env])).toMatchObject({
        environment: env,
        name: 'Admin console',
        type: 'public',
        secret_hash: null,
        first_party: true,
        redirect_uris: ['https://auth.example.com/console/callback'],
        scopes: CONSOLE_SCOPES,
      });
    }
    expect(first.clients.scope).toBe('openid profile email offline_access read:users write:users read:policies write:policies read:logs export:logs read:api_keys write:api_keys read:clients write:clients read:sso write:sso');
    const again = await service.ensure();
    expect(again).toEqual({ clients: first.clients, created: [], repaired: [] });
    expect(clients.rows.size).toBe(2);
    // get() answers from a read when nothing needs doing (no lock taken)
    expect(await service.get()).toEqual(first.clients);
    expect(consoleClients.locks).toBe(2);
  });

  it('puts back a changed client (new ISSUER, a PATCH) and recreates a deleted one', async () => {
    const { clients, service } = setup();
    const { clients: ids } = await service.ensure();
    clients.rows.get(ids.live)!.redirect_uris = ['https://old.example.com/console/callback'];
    clients.rows.get(ids.live)!.first_party = false;
    clients.rows.delete(ids.test);
    const now = await service.get();
    expect(now.live).toBe(ids.live);
    expect(now.test).not.toBe(ids.test);
    expect(clients.rows.get(ids.live)).toMatchObject({ first_party: true, redirect_uris: ['https://auth.example.com/console/callback'] });
    expect(clients.rows.get(now.test)).toMatchObject({ environment: 'test', first_party: true });
  });

  it('makes no client when ISSUER gives no valid redirect URI (plain http off loopback), warning once', async () => {
    const { clients, logger, service } = setup('http://auth.example.com');
    expect(await service.ensure()).toEqual({ clients: { live: '', test: '', redirectUri: 'http://auth.example.com/console/callback', scope: CONSOLE_SCOPES.join(' ') }, created: [], repaired: [] });
    expect((await service.get()).live).toBe('');
    expect(clients.rows.size).toBe(0);
    expect(logger.warn).toHaveBeenCalledTimes(1);
    expect(consoleRedirectUri('http://127.0.0.1:8080')).toBe('http://127.0.0.1:8080/console/callback');
  });
});
