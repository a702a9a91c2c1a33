import { OAUTH_SCOPES, errorCodes, type ErrorCode } from '@secsvc/shared';
import { MAX_HEADER_KIB, REQUEST_TIMEOUT_MS } from '../http/client-errors';
import { routes as allRoutes } from '../routes';
import { DEFAULT_KEY_TYPES, type Route } from '../routes/route';
import { COMPONENTS, registerComponents } from './components';
import { boundedJson, refuseNul, SchemaSet, type Json } from './schemas';
import { surfacePaths, type Surface } from './surface';

export type { Surface } from './surface';

const toPath = (p: string) => p.replace(/:([A-Za-z]+)/g, '{$1}');

/** Options of the document: what this gateway serves, and at which public origin. */
export interface DocumentOptions extends Surface {
  /** The public origin (ISSUER): the document's server. */
  issuer: string;
  /** Responses carry X-RateLimit-* (false with RATE_LIMIT_STORE=off). */
  rateLimited: boolean;
}

/** The reasons of each error status, as every operation may meet them. */
const ERROR_DOCS: Partial<Record<ErrorCode, string>> = {
  invalid_request: 'The request is invalid: every faulty field is named in error.details by its full path',
  unauthorized: 'Missing, malformed, unknown, expired or revoked credential',
  forbidden:
    'The credential may not call this operation (key type, OAuth scope or policy); code mfa_required when the policies would allow it after a multi-factor authentication: a session steps up with POST /v1/auth/step-up, an OAuth access token gets WWW-Authenticate insufficient_user_authentication (RFC 9470) with acr_values and max_age',
  not_found: 'No such resource',
  request_timeout: `The request did not arrive in full within ${REQUEST_TIMEOUT_MS / 1000} seconds (answered by the HTTP server, which then closes the connection)`,
  payload_too_large: 'The body is larger than 1 MiB',
  unsupported_media_type: 'The body is not application/json',
  rate_limited: 'Rate limit exceeded; retry after Retry-After seconds',
  request_header_fields_too_large:
    `The request line and headers are larger than ${MAX_HEADER_KIB} KiB, a query string that long included (answered by the HTTP server, which then closes the connection)`,
  internal_error: 'An internal error (never caused by input; no internal detail is shown)',
  unavailable: 'A service or store the operation needs is unavailable; retry after Retry-After seconds when given',
};

/** What the HTTP server answers itself (http/client-errors.ts), before any route: any operation can meet them. */
const PARSER_REFUSALS: readonly ErrorCode[] = ['request_timeout', 'request_header_fields_too_large'];

/** Builds the document's shared pieces: headers, error responses, security schemes. */
function common(o: DocumentOptions, set: SchemaSet) {
  const base = o.issuer.replace(/\/+$/, '');
  const headers: Record<string, Json> = {
    'X-Request-Id': { description: 'The request id (req_<id>): echoes a well-formed incoming X-Request-Id, else a new one', required: true, schema: { type: 'string', pattern: '^req_[0-9a-z]{26}$' } },
    'X-RateLimit-Limit': { description: 'Requests allowed in the window (a minute)', required: true, schema: { type: 'integer', minimum: 0 } },
    'X-RateLimit-Remaining': { description: 'Requests left in the window', required: true, schema: { type: 'integer', minimum: 0 } },
    'X-RateLimit-Reset': { description: 'When the window resets (Unix time, seconds)', required: true, schema: { type: 'integer', minimum: 0 } },
    'Retry-After': { description: 'Seconds to wait before retrying', schema: { type: 'integer', minimum: 0 } },
    'WWW-Authenticate': {
      description: 'The authentication scheme and, for OAuth tokens, the error: insufficient_scope (RFC 6750), insufficient_user_authentication with acr_values and max_age (RFC 9470)',
      schema: { type: 'string' },
    },
  };
  const headerRefs = (extra: string[] = []): Json =>
    Object.fromEntries(
      ['X-Request-Id', ...(o.rateLimited ? ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset'] : []), ...extra].map((h) => [h, { $ref: `#/components/headers/${h}` }]),
    );
  const extraHeaders: Partial<Record<ErrorCode, string[]>> = {
    unauthorized: ['WWW-Authenticate'],
    forbidden: ['WWW-Authenticate'],
    rate_limited: ['Retry-After'],
    unavailable: ['Retry-After'],
  };
  const errorBody = (code: ErrorCode, description: string): Json => ({
    description,
    // The HTTP server's own refusals come before any middleware: the request id only.
    headers: PARSER_REFUSALS.includes(code) ? { 'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' } } : headerRefs(extraHeaders[code]),
    content: { 'application/json': { schema: set.ref('Error') } },
  });
  // The usual answer of each error code once, referenced; an operation's own wording stays inline.
  const responses = Object.fromEntries(Object.entries(ERROR_DOCS).map(([code, text]) => [responseName(code), errorBody(code as ErrorCode, text)]));
  const errorResponse = (code: ErrorCode, description?: string): Json =>
    description === undefined && ERROR_DOCS[code] ? { $ref: `#/components/responses/${responseName(code)}` } : errorBody(code, description ?? code);
  const scopes = Object.fromEntries(OAUTH_SCOPES.map((s) => [s, scopeDescription(s)]));
  const securitySchemes = {
    bearerAuth: {
      type: 'http',
      scheme: 'bearer',
      description: 'An API key (svc_sk_… secret, svc_pk_… public, svc_test_… test), a session token, or an access token (JWT) from the authorization server',
    },
    oauth2: {
      type: 'oauth2',
      description: 'Access tokens of the authorization server; each operation names the scope it needs',
      flows: {
        authorizationCode: { authorizationUrl: `${base}/oauth/authorize`, tokenUrl: `${base}/oauth/token`, refreshUrl: `${base}/oauth/token`, scopes },
        clientCredentials: { tokenUrl: `${base}/oauth/token`, scopes },
      },
    },
    openIdConnect: { type: 'openIdConnect', openIdConnectUrl: `${base}/.well-known/openid-configuration` },
  };
  return { headers, headerRefs, errorResponse, responses, securitySchemes };
}

/** invalid_request -> InvalidRequest */
const responseName = (code: string) => code.replace(/(^|_)([a-z])/g, (_m, _s, ch: string) => ch.toUpperCase());

function scopeDescription(scope: string): string {
  const [verb, area] = scope.split(':');
  if (!area) return `OpenID Connect: ${scope}`;
  return `${verb === 'read' ? 'Read' : verb === 'write' ? 'Change' : 'Export'} ${area}`;
}

type Common = ReturnType<typeof common>;

function parameters(route: Route, set: SchemaSet): Json[] {
  const out: Json[] = [];
  for (const [where, schema] of [
    ['path', route.params],
    ['query', route.query],
  ] as const) {
    if (!schema) continue;
    const js = set.convert(schema, 'input') as { properties?: Record<string, Json>; required?: string[] };
    for (const [name, prop] of Object.entries(js.properties ?? {})) {
      const { description, ...schemaOnly } = prop;
      out.push({ name, in: where, required: where === 'path' || (js.required ?? []).includes(name), ...(description ? { description } : {}), schema: schemaOnly });
    }
  }
  return out;
}

/** One /v1 JSON operation, from its route: input schemas, documented answers and every error it can meet. */
function operation(route: Route, set: SchemaSet, c: Common): Json {
  const responses: Record<string, Json> = {};
  for (const [status, doc] of Object.entries(route.responses)) {
    const code = (Object.keys(errorCodes) as ErrorCode[]).find((k) => String(errorCodes[k].http) === status);
    responses[status] =
      Number(status) >= 400 && code
        ? c.errorResponse(code, doc.description)
        : {
            description: doc.description,
            headers: c.headerRefs(),
            ...(doc.schema ? { content: { 'application/json': { schema: set.convert(doc.schema, 'output') } } } : {}),
          };
  }
  const errors: ErrorCode[] = ['invalid_request', 'unauthorized', 'forbidden', 'rate_limited', 'internal_error', 'unavailable'];
  if (route.params) errors.push('not_found');
  if (route.body) errors.push('payload_too_large', 'unsupported_media_type');
  for (const code of errors) responses[String(errorCodes[code].http)] ??= c.errorResponse(code);
  const scope = route.scope;
  const keyTypes = route.keyTypes ?? DEFAULT_KEY_TYPES;
  return {
    operationId: route.operationId,
    summary: route.summary,
    description: route.anonymous
      ? `Open: no credential needed (a ${keyTypes.join(', ')} key may be sent).`
      : `Callable with ${keyTypes.join(', ')} API keys${scope ? `, session tokens and access tokens with the scope ${scope}` : ' and session tokens'} (users are authorized by the policies).`,
    tags: route.tags,
    security: route.anonymous ? [] : [{ bearerAuth: [] }, ...(scope ? [{ oauth2: [scope] }, { openIdConnect: [scope] }] : [])],
    parameters: parameters(route, set),
    ...(route.body ? { requestBody: { required: true, content: { 'application/json': { schema: set.convert(route.body, 'input') } } } } : {}),
    responses, // sorted by status once every path is in (buildOpenApi)
  };
}

/** OpenAPI 3.1 of every public HTTP route, generated from the same zod schemas that validate requests. */
export function buildOpenApi(routes: Route[], options: DocumentOptions) {
  registerComponents();
  const set = new SchemaSet();
  for (const schema of Object.values(COMPONENTS)) set.convert(schema, 'output');
  const c = common(options, set);
  const paths: Record<string, Record<string, Json>> = {};
  for (const route of routes) (paths[`/v1${toPath(route.path)}`] ??= {})[route.method] = operation(route, set, c);
  for (const [path, item] of Object.entries(surfacePaths(options, set, c))) paths[path] = { ...paths[path], ...item };
  for (const item of Object.values(paths)) {
    for (const op of Object.values(item)) {
      // The HTTP server's own refusals (http/client-errors.ts) can meet any operation.
      const responses = (op.responses ??= {}) as Record<string, Json>;
      for (const code of PARSER_REFUSALS) responses[String(errorCodes[code].http)] ??= c.errorResponse(code);
      op.responses = Object.fromEntries(Object.entries(responses).sort(([a], [b]) => Number(a) - Number(b)));
      for (const p of (op.parameters as Json[] | undefined) ?? []) p.schema = refuseNul(p.schema);
      const content = (op.requestBody as { content?: Record<string, Json> } | undefined)?.content ?? {};
      for (const media of Object.values(content)) media.schema = boundedJson(refuseNul(media.schema), set);
    }
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Security Service API',
      version: '1.0.0',
      description:
        'Authentication (API keys, sessions, OAuth 2.0 / OpenID Connect with PKCE, JWT, SAML SSO), users, access policies with a simulator, and audit logs with search and export. Errors: {"error":{"code","message","details":[{"field","message"}]},"meta":{"requestId"}}.',
    },
    servers: [{ url: options.issuer.replace(/\/+$/, ''), description: 'The public origin (ISSUER); the REST API is under /v1' }],
    tags: [...new Set(Object.values(paths).flatMap((item) => Object.values(item).flatMap((op) => (op.tags as string[] | undefined) ?? [])))].sort().map((name) => ({ name })),
    paths: Object.fromEntries(Object.entries(paths).sort(([a], [b]) => a.localeCompare(b))),
    components: {
      schemas: Object.fromEntries(Object.entries(set.components).sort(([a], [b]) => a.localeCompare(b))),
      responses: c.responses,
      headers: c.headers,
      securitySchemes: c.securitySchemes,
    },
  };
}

export type OpenApiDocument = ReturnType<typeof buildOpenApi>;

/** The served document: every public HTTP route of a gateway with this surface, at the public origin. */
export function openApiDocument(options: DocumentOptions): OpenApiDocument {
  return buildOpenApi(allRoutes, options);
}
