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

export function validateUpdate(input: { name?: string; metadataJson?: string }): { name?: string; metadata?: Record<string, unknown> } {
  const out: { name?: string; metadata?: Record<string, unknown> } = {};
  if (input.name !== undefined) out.name = parseOrThrow(nameSchema, input.name, 'name');
  if (input.metadataJson !== undefined) out.metadata = parseMetadataJson(input.metadataJson);
  if (out.name === undefined && out.metadata === undefined) {
    throw AppError.invalid([{ field: '(body)', message: 'give at least one of name, metadata' }]);
  }
  return out;
}
