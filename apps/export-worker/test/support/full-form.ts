import type { LogRow } from '@secsvc/audit-store';

/** The SPEC full form of a log entry (GET /logs/{id}), built straight from a stored row. */
export interface FullEntry {
  id: string;
  timestamp: string;
  event: string;
  actor: { id?: string; email?: string; type: string; name?: string };
  target?: { id: string; type: string };
  context: { ip: string; userAgent: string; location?: { city: string; country: string; region: string; coordinates: { lat: number; lng: number } } };
  result: string;
  traceId: string;
  metadata: Record<string, unknown>;
}

/** A stored metadata text as the object JSON.parse makes of it, {} when it makes none; memoized, so callers only read it. */
const metadataMemo = new Map<string, Record<string, unknown>>();
function metadataShared(text: string): Record<string, unknown> {
  let v = metadataMemo.get(text);
  if (v === undefined) {
    try {
      const parsed: unknown = JSON.parse(text);
      v = parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
    } catch {
      v = {};
    }
    if (metadataMemo.size < 4096) metadataMemo.set(text, v);
  }
  return v;
}

/**
 * The SPEC full form of a log entry (GET /logs/{id}) built in JavaScript from a stored row: the independent
 * reference the tests hold ClickHouse's rendering (libs/audit-store export-render.ts) to.
 */
export function fullForm(r: LogRow): FullEntry {
  const base: FullEntry['actor'] = r.actor_id ? (r.actor_email ? { id: r.actor_id, email: r.actor_email, type: r.actor_type } : { id: r.actor_id, type: r.actor_type }) : r.actor_email ? { email: r.actor_email, type: r.actor_type } : { type: r.actor_type };
  const actor = r.actor_name ? { ...base, name: r.actor_name } : base;
  const context: FullEntry['context'] =
    r.lat !== null && r.lng !== null
      ? { ip: r.ip, userAgent: r.user_agent, location: { city: r.city, country: r.country, region: r.region, coordinates: { lat: r.lat, lng: r.lng } } }
      : { ip: r.ip, userAgent: r.user_agent };
  const entry: FullEntry = { id: r.id, timestamp: r.timestamp, event: r.event, actor, context, result: r.result, traceId: r.trace_id, metadata: metadataShared(r.metadata) };
  if (r.target_id) {
    // Keep the SPEC's field order: target right after actor.
    return { id: entry.id, timestamp: entry.timestamp, event: entry.event, actor, target: { id: r.target_id, type: r.target_type }, context, result: entry.result, traceId: entry.traceId, metadata: entry.metadata };
  }
  return entry;
}
