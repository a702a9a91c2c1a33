import { newId, type Logger, type PoolClient } from '@secsvc/shared';
import { validateClientFields } from '../domain/oauth';
import type { consoleClientsRepository } from '../repositories/console-clients';
import type { OAuthClientRow } from '../repositories/oauth';
import type { OAuthClientsRepository } from './oauth-clients';
import type { Database } from './ports';

/** What the admin console asks for: sign-in (openid, profile, email), refresh tokens, and the API areas it manages. */
export const CONSOLE_SCOPES = ['openid', 'profile', 'email', 'offline_access', 'read:users', 'write:users', 'read:policies', 'write:policies', 'read:logs', 'export:logs', 'read:api_keys', 'write:api_keys', 'read:clients', 'write:clients', 'read:sso', 'write:sso'];
export const CONSOLE_CLIENT_NAME = 'Admin console';
const ENVIRONMENTS = ['live', 'test'] as const;
type Environment = (typeof ENVIRONMENTS)[number];

/** Where the console receives its authorization codes: the gateway serves it at /console. */
export function consoleRedirectUri(issuer: string): string {
  return `${issuer.replace(/\/+$/, '')}/console/callback`;
}

export type ConsoleClientsRepository = Pick<typeof consoleClientsRepository, 'list' | 'set' | 'lock'>;

export interface ConsoleClientsDeps {
  db: Database;
  clients: Pick<OAuthClientsRepository, 'insert' | 'update'>;
  consoleClients: ConsoleClientsRepository;
  /** ISSUER: the redirect URI is <ISSUER>/console/callback. */
  issuer: string;
  logger: Pick<Logger, 'info' | 'warn'>;
}

export interface ConsoleClients {
  /** '' when ISSUER makes no valid redirect URI. */
  live: string;
  test: string;
  redirectUri: string;
  scope: string;
}

/**
 * The admin console's first-party public clients, one per environment (a client only signs in users of its
 * own environment): public (PKCE, no secret), first party (no consent page), redirect URI
 * <ISSUER>/console/callback, CONSOLE_SCOPES. ensure() creates what is missing and puts back what was changed
 * (a new ISSUER, a PATCH through the API), in one transaction under an advisory lock, so replicas starting at
 * once create one client per environment. get() answers from one read when nothing needs doing.
 */
export class ConsoleClientsService {
  private warned = false;

  constructor(private readonly deps: ConsoleClientsDeps) {}

  private get redirectUri(): string {
    return consoleRedirectUri(this.deps.issuer);
  }

  /** Whether `row` is the console's client as it should be. */
  private fits(row: OAuthClientRow | undefined): boolean {
    if (!row) return false;
    const same = (a: string[], b: string[]) => a.length === b.length && [...a].sort().join(' ') === [...b].sort().join(' ');
    return row.type === 'public' && row.first_party && same(row.redirect_uris, [this.redirectUri]) && same(row.scopes, CONSOLE_SCOPES);
  }

  /** The redirect URI's problem (a plain-http ISSUER on a host that is not loopback), warned about once. */
  private unusable(): boolean {
    const errors = validateClientFields({ redirectUris: [this.redirectUri] }, 'public');
    if (errors.length && !this.warned) {
      this.warned = true;
      this.deps.logger.warn({ redirectUri: this.redirectUri, problems: errors.map((e) => e.message) }, 'the admin console has no OAuth client: ISSUER makes no valid redirect URI');
    }
    return errors.length > 0;
  }

  private answer(rows: Map<string, OAuthClientRow>): ConsoleClients {
    return { live: rows.get('live')?.id ?? '', test: rows.get('test')?.id ?? '', redirectUri: this.redirectUri, scope: CONSOLE_SCOPES.join(' ') };
  }

  /** The clients, made right first when one is missing or changed. */
  async get(): Promise<ConsoleClients> {
    if (this.unusable()) return this.answer(new Map());
    const rows = new Map((await this.deps.consoleClients.list(this.deps.db.pool)).map((r) => [r.environment, r]));
    if (ENVIRONMENTS.every((env) => this.fits(rows.get(env)))) return this.answer(rows);
    return (await this.ensure()).clients;
  }

  /** Creates the missing clients and repairs changed ones; says which environments it created or repaired. */
  async ensure(): Promise<{ clients: ConsoleClients; created: Environment[]; repaired: Environment[] }> {
    if (this.unusable()) return { clients: this.answer(new Map()), created: [], repaired: [] };
    const { db, clients, consoleClients, logger } = this.deps;
    const created: Environment[] = [];
    const repaired: Environment[] = [];
    const rows = await db.transaction(async (tx: PoolClient) => {
      await consoleClients.lock(tx);
      const rows = new Map((await consoleClients.list(tx)).map((r) => [r.environment, r]));
      for (const environment of ENVIRONMENTS) {
        const row = rows.get(environment);
        if (this.fits(row)) continue;
        if (row && row.type === 'public') {
          const fixed = await clients.update(tx, environment, row.id, { redirectUris: [this.redirectUri], scopes: CONSOLE_SCOPES, firstParty: true });
          if (fixed) {
            rows.set(environment, fixed);
            repaired.push(environment);
            continue;
          }
        }
        const inserted = await clients.insert(tx, {
          id: newId('cli'),
          environment,
          name: CONSOLE_CLIENT_NAME,
          type: 'public',
          secretHash: null,
          redirectUris: [this.redirectUri],
          scopes: CONSOLE_SCOPES,
          firstParty: true,
        });
        await consoleClients.set(tx, environment, inserted.id);
        rows.set(environment, inserted);
        created.push(environment);
      }
      return rows;
    });
    const clientsNow = this.answer(rows);
    if (created.length || repaired.length) logger.info({ created, repaired, live: clientsNow.live, test: clientsNow.test, redirectUri: clientsNow.redirectUri }, 'admin console OAuth clients ensured');
    return { clients: clientsNow, created, repaired };
  }
}
