import { logFull, logListItem, logSearchHit } from '../routes/logs/schemas';
import { logExport } from '../routes/logs/export-schemas';
import { clientForm, createdClientForm } from '../routes/oauth-clients/schemas';
import { explanationSchema, policyFull, policyListItem, simulationResult } from '../routes/policies/schemas';
import { errorSchema, paginationSchema } from '../routes/route';
import { apiKeyForm, createdApiKeyForm } from '../routes/api-keys/schemas';
import { createdSessionForm, sessionForm } from '../routes/sessions/schemas';
import { connectionForm } from '../routes/sso-connections/schemas';
import { userCreated, userFull, userListItem, userUpdated } from '../routes/users/schemas';
import { named } from './schemas';

/**
 * The named components of the document: each response form once, referenced wherever a route uses it, so a
 * client generated from the document gets these type names. The full single-resource forms carry the plain
 * names (User, Policy, LogEntry); the SPEC's other forms of the same resource are named after their use.
 */
export const COMPONENTS = {
  Error: errorSchema,
  Pagination: paginationSchema,
  User: userFull,
  UserCreated: userCreated,
  UserUpdated: userUpdated,
  UserListItem: userListItem,
  ApiKey: apiKeyForm,
  ApiKeyCreated: createdApiKeyForm,
  Session: sessionForm,
  SessionCreated: createdSessionForm,
  Policy: policyFull,
  PolicyListItem: policyListItem,
  SimulationResult: simulationResult,
  PolicyExplanation: explanationSchema,
  LogEntry: logFull,
  LogListItem: logListItem,
  LogSearchHit: logSearchHit,
  LogExport: logExport,
  OAuthClient: clientForm,
  OAuthClientCreated: createdClientForm,
  SsoConnection: connectionForm,
};

let registered = false;

/** Registers the component names with zod (once). */
export function registerComponents(): void {
  if (registered) return;
  for (const [id, schema] of Object.entries(COMPONENTS)) named(schema, id);
  registered = true;
}
