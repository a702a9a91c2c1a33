import { AppError } from '@secsvc/shared';
import { validateCreate, validateUpdate } from './users';

function fieldsOf(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe('invalid_request');
    return (err as AppError).details.map((d) => d.field);
  }
  throw new Error('expected a validation error');
}

describe('user rules in the identity service', () => {
  it('accepts a valid user and defaults metadata to {}', () => {
    expect(validateCreate({ email: 'a@b.co', name: 'A', roles: ['role_admin'], metadataJson: '' })).toEqual({
      email: 'a@b.co',
      name: 'A',
      roles: ['role_admin'],
      metadata: {},
    });
  });

  it('names every faulty field', () => {
    expect(fieldsOf(() => validateCreate({ email: 'nope', name: ' ', roles: ['admin'], metadataJson: '' }))).toEqual([
      'email',
      'name',
      'roles[0]',
    ]);
  });

  it('refuses metadata that is not a JSON object', () => {
    expect(fieldsOf(() => validateCreate({ email: 'a@b.co', name: 'A', roles: [], metadataJson: '[1]' }))).toEqual(['metadata']);
    expect(fieldsOf(() => validateCreate({ email: 'a@b.co', name: 'A', roles: [], metadataJson: '{bad' }))).toEqual(['metadata']);
  });

  it('requires at least one field on update', () => {
    expect(fieldsOf(() => validateUpdate({}))).toEqual(['(body)']);
    expect(validateUpdate({ metadataJson: '{"a":null}' })).toEqual({ metadata: { a: null } });
  });
});
