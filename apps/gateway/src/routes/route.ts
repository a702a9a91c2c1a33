import { z } from 'zod';
import type { Request } from 'express';
import { errorCodes, type ErrorCode, type OAUTH_SCOPES } from '@secsvc/shared';
import type { Principal, RouteContext } from '../context';

/** The scopes of API areas (read:users, write:policies, export:logs, ...): what an OAuth token needs for a route. */
export type ApiScope = Extract<(typeof OAUTH_SCOPES)[number], `${string}:${string}`>;

/** The key types a route allows unless it names its own: secret and test keys. */
export const DEFAULT_KEY_TYPES: readonly ('secret' | 'test' | 'public')[] = ['secret', 'test'];

export interface RouteResponse {
  status: number;
  body?: unknown;
}

export interface ResponseDoc {
  description: string;
  schema?: z.ZodType;
}

/** One route: its input schemas (validation + OpenAPI), documented responses and handler. */
export interface Route<P extends z.ZodType = z.ZodType, Q extends z.ZodType = z.ZodType, B extends z.ZodType = z.ZodType> {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  /** Express path relative to /v1, e.g. /users/:id */
  path: string;
  /**
   * The scope an OAuth access token needs to call it: read:<area> for calls that change nothing (GET, and
   * read-only POSTs such as /policies/simulate), write:<area> for changes, export:logs for exports. Absent:
   * closed to OAuth access tokens (API keys, OAuth clients, token exchange, login pages).
   */
  scope?: ApiScope;
  operationId: string;
  summary: string;
  tags: string[];
  params?: P;
  query?: Q;
  body?: B;
  responses: Record<number, ResponseDoc>;
  /** Key types allowed to call it (default: secret and test keys). Public keys get 403 elsewhere. */
  keyTypes?: ('secret' | 'test' | 'public')[];
  /** The policy action of the call when it is not the method's (read, create, update, delete). */
  action?: string;
  /** Callable without any credential (login pages); public keys must then be allowed in keyTypes too. */
  anonymous?: boolean;
  /**
   * A further policy decision a user needs for part of the call (the body is not validated yet): for example
   * assigning roles within an update needs `assign_roles` on `/users/<id>/roles`, so a policy that lets users
   * update their own account does not let them grant themselves roles.
   */
  alsoAuthorize?: (req: Request) => { action: string; resource: string } | undefined;
  /** A user acting on the very credential it presented (its own session): allowed without a policy. */
  ownCredential?: (req: Request, principal: Principal) => boolean;
  handle: (
    input: { params: z.infer<P>; query: z.infer<Q>; body: z.infer<B> },
    ctx: RouteContext,
  ) => Promise<RouteResponse>;
}

export function defineRoute<P extends z.ZodType, Q extends z.ZodType, B extends z.ZodType>(route: Route<P, Q, B>): Route {
  return route as unknown as Route;
}

/** `{ data }` envelope of single-resource responses. */
export const dataOf = <T extends z.ZodType>(schema: T) => z.object({ data: schema });

export const paginationSchema = z.object({
  hasMore: z.boolean(),
  nextCursor: z.string().optional().describe('cur_...; present when hasMore is true'),
});

/** The body of a list response: `{ data, pagination: { hasMore, nextCursor? } }`. */
export function pageOf<T>(data: T[], hasMore: boolean, nextCursor: string): RouteResponse {
  return { status: 200, body: { data, pagination: { hasMore, ...(hasMore ? { nextCursor } : {}) } } };
}

/** `{ data: [...], pagination }` envelope of list responses. */
export const listOf = <T extends z.ZodType>(schema: T) => z.object({ data: z.array(schema), pagination: paginationSchema });

export const errorSchema = z.object({
  error: z.object({
    // every code of the one table (@secsvc/shared errors.ts), so a client can switch on them
    code: z.enum(Object.keys(errorCodes) as [ErrorCode, ...ErrorCode[]]),
    message: z.string(),
    details: z.array(z.object({ field: z.string(), message: z.string() })).optional(),
  }),
  meta: z.object({ requestId: z.string() }),
});

/** limit query parameter: integer 1..100, default 20. */
export const limitParam = z
  .string({ error: 'must be an integer from 1 to 100' })
  .regex(/^\d{1,3}$/, 'must be an integer from 1 to 100')
  .transform(Number)
  .pipe(z.number().min(1, 'must be an integer from 1 to 100').max(100, 'must be an integer from 1 to 100'))
  .optional()
  .default(20)
  .meta({ type: 'integer', minimum: 1, maximum: 100, default: 20, description: 'Page size' });

export const cursorParam = z.string({ error: 'must be a single string' }).max(512, 'invalid or expired cursor').optional();
