import type { audit } from '@secsvc/proto';
import { EVENT_KIND } from '@secsvc/shared';
import { z } from 'zod';

const timestamp = z.string().describe('ISO 8601 UTC, millisecond precision');

/** A time bound in a query string or body: ISO 8601 with a zone (Z or ±hh:mm). */
export const timeParam = z
  .string({ error: 'must be an ISO 8601 timestamp' })
  .regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/, 'must be an ISO 8601 timestamp with a zone, e.g. 2026-11-01T00:00:00Z')
  .refine((v) => !Number.isNaN(Date.parse(v)), 'must be a valid date')
  .transform((v) => new Date(v).toISOString());

/** `events=a,b` → ['a', 'b'] (each an event kind such as user.login; at most 50). */
export const eventsParam = z
  .string({ error: 'must be a comma-separated list of event kinds' })
  .max(2000, 'too long')
  .transform((v, ctx) => {
    const kinds = v.split(',').map((k) => k.trim()).filter(Boolean);
    if (kinds.length === 0 || kinds.length > 50) ctx.addIssue({ code: 'custom', message: 'must list 1 to 50 event kinds' });
    for (const k of kinds) if (!EVENT_KIND.test(k)) ctx.addIssue({ code: 'custom', message: `"${k.slice(0, 64)}" is not an event kind such as user.login` });
    return kinds;
  });

const actor = z.object({ id: z.string().optional(), email: z.string().optional(), type: z.string().describe('user | api_key | anonymous') });
const target = z.object({ id: z.string(), type: z.string() });
const listLocation = z.object({ city: z.string(), country: z.string().describe('ISO 3166-1 alpha-2') });
const fullLocation = listLocation.extend({ region: z.string(), coordinates: z.object({ lat: z.number(), lng: z.number() }) });

export const logListItem = z.object({
  id: z.string().describe('log_<id>'),
  timestamp,
  event: z.string(),
  actor,
  target: target.optional(),
  context: z.object({ ip: z.string(), userAgent: z.string(), location: listLocation.optional().describe('absent for private, loopback and unknown addresses') }),
  result: z.enum(['success', 'failure']),
});

export const logFull = logListItem.extend({
  context: z.object({ ip: z.string(), userAgent: z.string(), location: fullLocation.optional() }),
  traceId: z.string(),
  metadata: z.record(z.string(), z.unknown()),
});

export const logSearchHit = logListItem.extend({
  highlights: z.record(z.string(), z.string()).describe('field → its text, HTML-escaped, with each match wrapped in <em>'),
});

function base(entry: audit.LogEntry) {
  const e = entry.event!;
  return {
    id: e.id,
    timestamp: e.timestamp!,
    event: e.type,
    actor: { ...(e.actor?.id ? { id: e.actor.id } : {}), ...(e.actor?.email ? { email: e.actor.email } : {}), type: e.actor?.type ?? 'anonymous' },
    ...(e.target ? { target: { id: e.target.id, type: e.target.type } } : {}),
  };
}

function metadataOf(json: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(json);
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

export const logForms = {
  listItem(entry: audit.LogEntry): z.infer<typeof logListItem> {
    const e = entry.event!;
    const l = entry.location;
    return {
      ...base(entry),
      context: { ip: e.context?.ip ?? '', userAgent: e.context?.userAgent ?? '', ...(l ? { location: { city: l.city, country: l.country } } : {}) },
      result: e.result as 'success' | 'failure',
    };
  },
  full(entry: audit.LogEntry): z.infer<typeof logFull> {
    const e = entry.event!;
    const l = entry.location;
    return {
      ...base(entry),
      context: {
        ip: e.context?.ip ?? '',
        userAgent: e.context?.userAgent ?? '',
        ...(l ? { location: { city: l.city, country: l.country, region: l.region, coordinates: { lat: l.lat, lng: l.lng } } } : {}),
      },
      result: e.result as 'success' | 'failure',
      traceId: e.traceId,
      metadata: metadataOf(e.metadataJson),
    };
  },
  searchHit(entry: audit.LogEntry): z.infer<typeof logSearchHit> {
    return { ...logForms.listItem(entry), highlights: { ...entry.highlights } };
  },
};
