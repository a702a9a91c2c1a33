// What the user forms read from their inputs before the API checks them: roles typed as a list, metadata as
// JSON text. The API's own validation messages (error.details) are shown next to the fields they name.

/** Roles typed separated by commas, spaces or new lines: `role_admin, role_ops`. */
export function parseRoles(text: string): string[] {
  return text.split(/[\s,]+/).filter(Boolean);
}

export const formatRoles = (roles: readonly string[]) => roles.join(', ');

/** The metadata textarea: a JSON value, or the parser's message (the API says whether the value is acceptable). */
export function parseJsonText(text: string): { ok: true; value: unknown } | { ok: false; message: string } {
  if (text.trim() === '') return { ok: true, value: {} };
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (err) {
    return { ok: false, message: `is not valid JSON: ${(err as Error).message}` };
  }
}

export const formatJson = (value: unknown) => JSON.stringify(value, null, 2);

/** An API timestamp as `2025-01-31 14:05 UTC`. */
export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : `${d.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}
