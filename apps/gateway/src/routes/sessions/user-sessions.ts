import { AppError, isId } from '@secsvc/shared';
import { z } from 'zod';
import { userIdParams } from '../users/schemas';
import { defineRoute, errorSchema, listOf } from '../route';
import { sessionForm, sessionOf } from './schemas';

export const listUserSessionsRoute = defineRoute({
  method: 'get',
  path: '/users/:id/sessions',
  scope: 'read:users',
  operationId: 'listUserSessions',
  summary: "A user's active sessions, newest first",
  tags: ['sessions'],
  params: userIdParams,
  responses: {
    200: { description: 'Active sessions', schema: listOf(sessionForm) },
    404: { description: 'No such user', schema: errorSchema },
  },
  async handle({ params }, ctx) {
    if (!isId('user', params.id)) throw AppError.notFound('User');
    const res = await ctx.clients.identity.listUserSessions({ environment: ctx.principal.environment, userId: params.id }, ctx.call);
    return { status: 200, body: { data: res.sessions.map(sessionOf), pagination: { hasMore: false } } };
  },
});

export const revokeUserSessionsRoute = defineRoute({
  method: 'delete',
  path: '/users/:id/sessions',
  scope: 'write:users',
  operationId: 'revokeUserSessions',
  summary: "End all of a user's sessions",
  tags: ['sessions'],
  params: userIdParams,
  responses: {
    204: { description: 'All ended' },
    404: { description: 'No such user', schema: errorSchema },
  },
  async handle({ params }, ctx) {
    if (!isId('user', params.id)) throw AppError.notFound('User');
    await ctx.clients.identity.revokeUserSessions({ environment: ctx.principal.environment, userId: params.id }, ctx.call);
    await ctx.verifyCache?.dropUser(params.id);
    return { status: 204 };
  },
});

export const revokeUserSessionRoute = defineRoute({
  method: 'delete',
  path: '/users/:id/sessions/:sessionId',
  scope: 'write:users',
  operationId: 'revokeUserSession',
  summary: 'End one session of a user, by its id (an administrator ending a session without its token)',
  tags: ['sessions'],
  params: userIdParams.extend({ sessionId: z.string() }),
  responses: {
    204: { description: 'Ended' },
    404: { description: 'No such user, or no active session of that user with this id', schema: errorSchema },
  },
  async handle({ params }, ctx) {
    if (!isId('user', params.id)) throw AppError.notFound('User');
    if (!isId('ses', params.sessionId)) throw AppError.notFound('Session');
    await ctx.clients.identity.revokeUserSessions({ environment: ctx.principal.environment, userId: params.id, sessionId: params.sessionId }, ctx.call);
    // The session's token is not known here: drop what is cached for the user (its other sessions are verified again).
    await ctx.verifyCache?.dropUser(params.id);
    return { status: 204 };
  },
});
