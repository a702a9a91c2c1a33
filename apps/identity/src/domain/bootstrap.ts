import { BOOTSTRAP_MARKER, newId, withTransaction, type Logger, type Pool } from '@secsvc/shared';
import { mintKey } from './api-keys';
import { apiKeysRepository } from '../repositories/api-keys';

/**
 * On first start with no API keys at all: create one secret admin key, from BOOTSTRAP_API_KEY when set,
 * otherwise generated and printed once to the console (never to the structured log). Several replicas
 * starting at once create at most one key (transaction-scoped advisory lock).
 */
export async function ensureBootstrapKey(
  pool: Pool,
  serverSecret: string,
  configured: string | undefined,
  logger: Logger,
  print: (line: string) => void,
): Promise<'created' | 'exists'> {
  const created = await withTransaction(pool, async (client) => {
    await client.query(`SELECT pg_advisory_xact_lock(hashtext('secsvc:bootstrap-key'))`);
    if ((await apiKeysRepository.count(client)) > 0) return undefined;
    const minted = mintKey('secret', serverSecret, configured);
    const id = newId('key');
    await apiKeysRepository.insert(client, { id, environment: 'live', type: 'secret', name: 'bootstrap admin key', plan: 'enterprise', ...minted });
    return { id, key: minted.key, generated: configured === undefined };
  });
  if (!created) return 'exists';
  logger.info({ keyId: created.id, source: created.generated ? 'generated' : 'BOOTSTRAP_API_KEY' }, 'bootstrap API key created');
  if (created.generated) print(`${BOOTSTRAP_MARKER} ${created.key}`);
  return 'created';
}
