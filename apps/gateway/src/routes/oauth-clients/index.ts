import { createClientRoute } from './create-client';
import { deleteClientRoute } from './delete-client';
import { getClientRoute } from './get-client';
import { listClientsRoute } from './list-clients';
import { updateClientRoute } from './update-client';

export const oauthClientRoutes = [listClientsRoute, createClientRoute, getClientRoute, updateClientRoute, deleteClientRoute];
