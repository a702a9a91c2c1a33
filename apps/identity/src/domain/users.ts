import { emailSchema, metadataSchema, nameSchema, parseOrThrow, rolesSchema, AppError } from '@secsvc/shared';
import { z } from 'zod';

/** Input rules of the identity service; the gateway applies the same schemas at the edge. */
export const createUserInput = z.object({
  email: emailSchema,
  name: nameSchema,
  roles: rolesSchema,
  metadata: metadataSchema,
});

export type CreateUserInput = z.infer<typeof createUserInput>;

/** The text a user list is searched by (GET /v1/users?email=): part of an email, matched case-insensitively. */
export const emailSearchSchema = z
  .string()
  .min(1, 'must not be empty')
  .max(254, 'must be at most 254 characters')
  .refine((v) => !v.includes('\0'), 'must not contain NUL');

export function parseMetadataJson(text: string, field = 'metadata'): Record<string, unknown> {
  if (text === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw AppError.field(field, 'must be valid JSON');
  }
  return parseOrThrow(metadataSchema, value, field);
}

export function validateCreate(input: { email: string; name: string; roles: string[]; metadataJson: string }): CreateUserInput {
  const metadata = parseMetadataJson(input.metadataJson);
  return parseOrThrow(createUserInput, { email: input.email, name: input.name, roles: input.roles, metadata });
}

export interface UserChanges {
  name?: string;
  metadata?: Record<string, unknown>;
  roles?: string[];
}

/** The changes of an update, each checked (every faulty field named at once); at least one is needed. */
export function validateUpdate(input: { name?: string; metadataJson?: string; roles?: { values: string[] } }): UserChanges {
  const shape = z.object({ name: nameSchema.optional(), roles: rolesSchema.optional() });
  const { name, roles } = parseOrThrow(shape, { name: input.name, roles: input.roles?.values });
  const out: UserChanges = {};
  if (name !== undefined) out.name = name;
  if (input.metadataJson !== undefined) out.metadata = parseMetadataJson(input.metadataJson);
  if (roles !== undefined) out.roles = roles;
  if (out.name === undefined && out.metadata === undefined && out.roles === undefined) {
    throw AppError.invalid([{ field: '(body)', message: 'give at least one of name, metadata, roles' }]);
  }
  return out;
}
