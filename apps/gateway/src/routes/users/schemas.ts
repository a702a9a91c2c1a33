import type { identity } from '@secsvc/proto';
import { emailSchema, metadataSchema, nameSchema, rolesSchema } from '@secsvc/shared';
import { z } from 'zod';
import { atLeastOne } from '../body-rules';

export const userIdParams = z.object({ id: z.string() });

export const createUserBody = z.strictObject({
  email: emailSchema,
  name: nameSchema,
  roles: rolesSchema.optional().default([]),
  metadata: metadataSchema.optional(),
});

export const updateUserBody = atLeastOne(
  z.strictObject({
    name: nameSchema.optional(),
    metadata: metadataSchema.optional(),
    roles: rolesSchema.optional().describe('Replaces the stored roles ([] removes them all)'),
  }),
  'give at least one of name, metadata, roles',
);

/** GET /v1/users?email=: part of an email, matched case-insensitively. */
export const emailSearchParam = z
  .string({ error: 'must be a single string' })
  .min(1, 'must not be empty')
  .max(254, 'must be at most 254 characters')
  .optional()
  .describe('Only users whose email contains this text (case-insensitive)');

const id = z.string().describe('user_<id>');
const timestamp = z.string().describe('ISO 8601 UTC, millisecond precision');

export const userCreated = z.object({
  id,
  email: z.string(),
  name: z.string(),
  emailVerified: z.boolean(),
  createdAt: timestamp,
  roles: z.array(z.string()),
});

export const userFull = userCreated.extend({
  metadata: z.record(z.string(), z.unknown()),
  updatedAt: timestamp,
});

export const userUpdated = z.object({
  id,
  email: z.string(),
  name: z.string(),
  updatedAt: timestamp,
  metadata: z.record(z.string(), z.unknown()),
});

export const userListItem = z.object({
  id,
  email: z.string(),
  name: z.string(),
  createdAt: timestamp,
  roles: z.array(z.string()),
});

const metadataOf = (u: identity.User) => (u.metadataJson ? (JSON.parse(u.metadataJson) as Record<string, unknown>) : {});

/** The SPEC's forms of a user, each with exactly its fields. */
export const userForms = {
  created: (u: identity.User): z.infer<typeof userCreated> => ({
    id: u.id,
    email: u.email,
    name: u.name,
    emailVerified: u.emailVerified,
    createdAt: u.createdAt!,
    roles: u.roles,
  }),
  full: (u: identity.User): z.infer<typeof userFull> => ({
    id: u.id,
    email: u.email,
    name: u.name,
    emailVerified: u.emailVerified,
    roles: u.roles,
    metadata: metadataOf(u),
    createdAt: u.createdAt!,
    updatedAt: u.updatedAt!,
  }),
  updated: (u: identity.User): z.infer<typeof userUpdated> => ({
    id: u.id,
    email: u.email,
    name: u.name,
    updatedAt: u.updatedAt!,
    metadata: metadataOf(u),
  }),
  listItem: (u: identity.User): z.infer<typeof userListItem> => ({
    id: u.id,
    email: u.email,
    name: u.name,
    createdAt: u.createdAt!,
    roles: u.roles,
  }),
};
