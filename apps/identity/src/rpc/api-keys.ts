import type { identity } from '@secsvc/proto';
import { AppError, keysetPage, newId, pageRequest, withTransaction, type CallContext, type PoolClient } from '@secsvc/shared';
import { callerOf, environmentOf, type IdentityContext } from '../context';
import { environmentOf as keyEnvironment, mintKey, type KeyType } from '../domain/api-keys';
import { apiKeysRepository, type ApiKeyRow } from '../repositories/api-keys';
import { appendEvent } from '../repositories/outbox';

// The API-key RPCs live together: they share their row mapping, scoping and event shape.

export const MAX_GRACE_SECONDS = 7 * 24 * 3600;
const PLANS = ['free', 'pro', 'enterprise'];
const TYPES: KeyType[] = ['secret', 'public', 'test'];

export function toApiKeyMessage(row: ApiKeyRow): identity.ApiKey {
  const graceOpen = row.previous_expires_at && row.previous_expires_at.getTime() > Date.now();
  return {
    id: row.id,
    environment: row.environment,
    name: row.name,
    type: row.type,
    plan: row.plan,
    rateLimit: row.rate_limit ?? undefined,
    prefix: row.prefix,
    last4: row.last4,
    createdAt: row.created_at.toISOString(),
    lastUsedAt: row.last_used_at?.toISOString(),
    expiresAt: row.expires_at?.toISOString(),
    revokedAt: row.revoked_at?.toISOString(),
    previousExpiresAt: graceOpen ? row.previous_expires_at!.toISOString() : undefined,
  };
}

/** An event about a key, in the caller's environment (actors never cross environments; a test key made with a live key is recorded in live). */
function keyEvent(client: PoolClient, call: CallContext, type: string, row: ApiKeyRow, environment: string, metadata: Record<string, unknown> = {}) {
  return appendEvent(client, {
    ...callerOf(call),
    environment,
    type,
    target: { id: row.id, type: 'api_key' },
    result: 'success',
    traceId: call.requestId,
    // Never the secret: its prefix and last 4 characters at most.
    metadata: { keyType: row.type, keyEnvironment: row.environment, plan: row.plan, prefix: row.prefix, last4: row.last4, ...metadata },
  });
}

function validateCreate(req: identity.CreateApiKeyRequest, callerEnvironment: string) {
  const errors: { field: string; message: string }[] = [];
  const name = req.name.trim();
  if (!name || req.name.length > 100) errors.push({ field: 'name', message: 'must be 1 to 100 characters' });
  if (!TYPES.includes(req.type as KeyType)) errors.push({ field: 'type', message: 'must be secret, public or test' });
  const plan = req.plan || 'free';
  if (!PLANS.includes(plan)) errors.push({ field: 'plan', message: 'must be free, pro or enterprise' });
  if (req.rateLimit !== undefined) {
    if (!Number.isInteger(req.rateLimit) || req.rateLimit < 1 || req.rateLimit > 1_000_000) {
      errors.push({ field: 'rateLimit', message: 'must be an integer from 1 to 1000000 requests per minute' });
    } else if (plan !== 'enterprise') {
      errors.push({ field: 'rateLimit', message: 'a custom limit needs the enterprise plan' });
    }
  }
  let expiresAt: Date | undefined;
  if (req.expiresAt !== undefined) {
    expiresAt = new Date(req.expiresAt);
    if (Number.isNaN(expiresAt.getTime()) || expiresAt.getTime() <= Date.now()) {
      errors.push({ field: 'expiresAt', message: 'must be a timestamp in the future' });
    } else if (expiresAt.getTime() > Date.now() + 10 * 365 * 24 * 3600 * 1000) {
      errors.push({ field: 'expiresAt', message: 'must be within 10 years' });
    }
  }
  if (errors.length) throw AppError.invalid(errors);
  if (callerEnvironment === 'test' && req.type !== 'test') {
    throw new AppError('forbidden', 'A test key can only create test keys');
  }
  return { name, type: req.type as KeyType, plan, rateLimit: req.rateLimit ?? null, expiresAt: expiresAt ?? null };
}

export const createApiKey =
  (ctx: IdentityContext) =>
  async (req: identity.CreateApiKeyRequest, call: CallContext): Promise<identity.CreatedApiKey> => {
    const callerEnvironment = environmentOf(req.environment);
    const input = validateCreate(req, callerEnvironment);
    const minted = mintKey(input.type, ctx.config.SERVER_SECRET);
    const row = await withTransaction(ctx.pool, async (client) => {
      const inserted = await apiKeysRepository.insert(client, {
        id: newId('key'),
        environment: keyEnvironment(input.type),
        ...input,
        ...minted,
      });
      await keyEvent(client, call, 'api_key.created', inserted, callerEnvironment);
      return inserted;
    });
    return { apiKey: toApiKeyMessage(row), key: minted.key };
  };

export const listApiKeys =
  (ctx: IdentityContext) =>
  async (req: identity.ListApiKeysRequest): Promise<identity.ListApiKeysResponse> => {
    const environment = environmentOf(req.environment);
    const scope = { kind: 'api_keys', environment };
    const { limit, after } = pageRequest(req, scope, ctx.config.SERVER_SECRET);
    const rows = await apiKeysRepository.list(ctx.pool, environment, limit, after);
    const { page, hasMore, nextCursor } = keysetPage(rows, limit, scope, ctx.config.SERVER_SECRET);
    return { apiKeys: page.map(toApiKeyMessage), hasMore, nextCursor };
  };

export const getApiKey =
  (ctx: IdentityContext) =>
  async (req: identity.GetApiKeyRequest): Promise<identity.ApiKey> => {
    const row = await apiKeysRepository.get(ctx.pool, environmentOf(req.environment), req.id);
    if (!row) throw AppError.notFound('API key');
    return toApiKeyMessage(row);
  };

export const revokeApiKey =
  (ctx: IdentityContext) =>
  async (req: identity.RevokeApiKeyRequest, call: CallContext): Promise<identity.RevokeApiKeyResponse> => {
    const environment = environmentOf(req.environment);
    await withTransaction(ctx.pool, async (client) => {
      const before = await apiKeysRepository.get(client, environment, req.id);
      if (!before) throw AppError.notFound('API key');
      // Deleted by a concurrent call since it was read: gone.
      const row = await apiKeysRepository.revoke(client, environment, req.id);
      if (!row) throw AppError.notFound('API key');
      if (!before.revoked_at) await keyEvent(client, call, 'api_key.revoked', row, environment);
    });
    return {};
  };

export const rotateApiKey =
  (ctx: IdentityContext) =>
  async (req: identity.RotateApiKeyRequest, call: CallContext): Promise<identity.CreatedApiKey> => {
    const environment = environmentOf(req.environment);
    const grace = req.gracePeriodSeconds;
    if (!Number.isInteger(grace) || grace < 0 || grace > MAX_GRACE_SECONDS) {
      throw AppError.field('gracePeriod', 'must be between 0s and 7d');
    }
    return withTransaction(ctx.pool, async (client) => {
      const current = await apiKeysRepository.get(client, environment, req.id);
      if (!current) throw AppError.notFound('API key');
      if (current.revoked_at) throw new AppError('conflict', 'A revoked key cannot be rotated');
      const minted = mintKey(current.type, ctx.config.SERVER_SECRET);
      const row = await apiKeysRepository.rotate(client, current.id, minted.hash, minted.last4, grace > 0 ? new Date(Date.now() + grace * 1000) : null);
      await keyEvent(client, call, 'api_key.rotated', row, environment, { gracePeriodSeconds: grace });
      return { apiKey: toApiKeyMessage(row), key: minted.key };
    });
  };
