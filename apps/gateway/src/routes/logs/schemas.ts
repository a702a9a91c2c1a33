import type { audit } from '@secsvc/proto';
import { EVENT_KINDS, isEventKind } from '@secsvc/shared';
import { z } from 'zod';
import { evenWithFaultyFields } from '../body-rules';

const timestamp = z.string().describe('ISO 8601 UTC, millisecond precision');

/** A time bound in a query string or body: ISO 8601 with a zone (Z or ±hh:mm). */
export const timeParam = z.iso
  .datetime({ offset: true, error: 'must be an RFC 3339 timestamp with seconds and a zone, e.g. 2026-11-01T00:00:00Z' })
  .transform((v) => new Date(v).toISOString());

/** At most this many event kinds in one filter. */
export const MAX_EVENT_KINDS = 50;

const unknownKind = (value: string) => `unknown event kind "${value.slice(0, 64)}" (the kinds are the EventKind values of the API document, e.g. user.login)`;

/** One of the event kinds the product emits (the shared catalogue EVENT_KINDS). */
export const eventKindSchema = z.enum(EVENT_KINDS, { error: (i) => (typeof i.input === 'string' ? unknownKind(i.input) : 'must be an event kind') });

/** A JSON list of event kinds (POST /logs/export): each unknown kind is named by its index (events[1]). */
export const eventKindsSchema = z
  .array(eventKindSchema, { error: 'must be an array of event kinds' })
  .max(MAX_EVENT_KINDS, `at most ${MAX_EVENT_KINDS} event kinds`);

const KIND = `(${EVENT_KINDS.map((k) => k.replaceAll('.', '\\.')).join('|')})`;

/** `events=a,b` → ['a', 'b']: 1 to 50 kinds of the catalogue; each unknown kind is reported (field `events`, the kind in the message). */
export const eventsParam = z
  .string({ error: 'must be a comma-separated list of event kinds' })
  .max(2000, 'too long')
  .transform((v, ctx) => {
    const kinds = v.split(',').map((k) => k.trim()).filter(Boolean);
    if (kinds.length === 0 || kinds.length > MAX_EVENT_KINDS) ctx.addIssue({ code: 'custom', message: `must list 1 to ${MAX_EVENT_KINDS} event kinds` });
    for (const k of kinds) if (!isEventKind(k)) ctx.addIssue({ code: 'custom', message: unknownKind(k) });
    return kinds as (typeof EVENT_KINDS)[number][];
  })
  .meta({
    description: `Comma-separated event kinds (at most ${MAX_EVENT_KINDS}), each one of: ${EVENT_KINDS.join(', ')}`,
    pattern: `^\\s*${KIND}\\s*(,\\s*${KIND}\\s*)*$`,
  });

const isTime = (v: unknown): v is string => typeof v === 'string' && timeParam.safeParse(v).success;

/**
 * `to` after `from` (when both are given and valid), checked on the whole query or body even when another
 * field is at fault, so that every fault is reported at once.
 */
export function withTimeOrder<T extends z.ZodType>(schema: T): T {
  return schema.superRefine(
    (value, ctx) => {
      const { from, to } = value as { from?: unknown; to?: unknown };
      if (isTime(from) && isTime(to) && Date.parse(from) >= Date.parse(to)) ctx.addIssue({ code: 'custom', path: ['to'], message: 'must be after from' });
    },
    evenWithFaultyFields,
  );
}

const actor = z.object({
  id: z.string().optional(),
  email: z.string().optional(),
  type: z.string().describe('user | api_key | anonymous'),
  name: z.string().optional().describe("API keys: the key's name when the entry was recorded"),
});
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
    actor: { ...(e.actor?.id ? { id: e.actor.id } : {}), ...(e.actor?.email ? { email: e.actor.email } : {}), type: e.actor?.type ?? 'anonymous', ...(e.actor?.name ? { name: e.actor.name } : {}) },
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
