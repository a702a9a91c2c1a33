import { z } from 'zod';
import { routes as allRoutes } from './routes';
import { errorSchema, type Route } from './routes/route';

const toPath = (p: string) => p.replace(/:([A-Za-z]+)/g, '{$1}');

function jsonSchema(schema: z.ZodType, io: 'input' | 'output') {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Record<string, unknown>;
  return rest;
}

function parameters(route: Route) {
  const out: object[] = [];
  for (const [where, schema] of [
    ['path', route.params],
    ['query', route.query],
  ] as const) {
    if (!schema) continue;
    const js = jsonSchema(schema, 'input') as { properties?: Record<string, object>; required?: string[] };
    for (const [name, prop] of Object.entries(js.properties ?? {})) {
      out.push({ name, in: where, required: where === 'path' || (js.required ?? []).includes(name), schema: prop });
    }
  }
  return out;
}

/** OpenAPI 3.1 generated from the same Zod schemas that validate requests. */
export function buildOpenApi(routes: Route[], serverUrl: string) {
  const paths: Record<string, Record<string, object>> = {};
  for (const route of routes) {
    const error = { content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } };
    const responses: Record<string, object> = {
      401: { description: 'Missing or invalid API key', ...error },
      403: { description: `Key type not allowed (allowed: ${(route.keyTypes ?? ['secret', 'test']).join(', ')})`, ...error },
    };
    for (const [status, doc] of Object.entries(route.responses)) {
      responses[status] = {
        description: doc.description,
        ...(doc.schema ? { content: { 'application/json': { schema: jsonSchema(doc.schema, 'output') } } } : {}),
      };
    }
    (paths[toPath(route.path)] ??= {})[route.method] = {
      operationId: route.operationId,
      summary: route.summary,
      tags: route.tags,
      parameters: parameters(route),
      ...(route.body
        ? { requestBody: { required: true, content: { 'application/json': { schema: jsonSchema(route.body, 'input') } } } }
        : {}),
      responses,
    };
  }
  return {
    openapi: '3.1.0',
    info: { title: 'Security Service API', version: '1.0.0' },
    servers: [{ url: serverUrl }],
    security: [{ apiKey: [] }],
    components: {
      securitySchemes: { apiKey: { type: 'http', scheme: 'bearer', description: 'API key: svc_sk_..., svc_pk_... or svc_test_...' } },
      schemas: { Error: jsonSchema(errorSchema, 'output') },
    },
    paths,
  };
}

/** The served document: every public HTTP route, with the public origin (ISSUER) as its server. */
export function openApiDocument(issuer: string) {
  return buildOpenApi(allRoutes, `${issuer.replace(/\/+$/, '')}/v1`);
}
