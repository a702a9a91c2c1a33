import type { identity } from '@secsvc/proto';
import type { ConsoleClientsService } from '../services/console-clients';

export const getConsoleClients =
  (consoleClients: ConsoleClientsService) =>
  async (_req: identity.GetConsoleClientsRequest): Promise<identity.ConsoleClients> => {
    const c = await consoleClients.get();
    return { liveClientId: c.live, testClientId: c.test, redirectUri: c.redirectUri, scope: c.scope };
  };
