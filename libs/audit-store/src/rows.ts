import type { events } from '@secsvc/proto';

export interface Location {
  city: string;
  country: string;
  region: string;
  lat: number;
  lng: number;
}

/** One stored log entry, as the ClickHouse table holds it (search_text excepted). */
export interface LogRow {
  id: string;
  environment: string;
  /** UTC, millisecond precision, ISO 8601 with Z. */
  timestamp: string;
  event: string;
  actor_id: string;
  actor_email: string;
  actor_type: string;
  target_id: string;
  target_type: string;
  ip: string;
  user_agent: string;
  city: string;
  country: string;
  region: string;
  lat: number | null;
  lng: number | null;
  result: string;
  trace_id: string;
  metadata: string;
  /** API key actors: the key's name; empty otherwise. */
  actor_name: string;
  /** The entry's position in its environment's hash chain, where a read asked for it (exports); absent when unchained. */
  chain_seq?: number;
}

export const LOG_COLUMNS = [
  'id', 'environment', 'timestamp', 'event', 'actor_id', 'actor_email', 'actor_type', 'target_id', 'target_type', 'ip',
  'user_agent', 'city', 'country', 'region', 'lat', 'lng', 'result', 'trace_id', 'metadata', 'actor_name',
] as const;

/** A row from an event as it travelled on the bus, with the location found for its ip (if any). */
export function rowFromEvent(e: events.AuthEvent, location: Location | undefined): LogRow {
  return {
    id: e.id,
    environment: e.environment,
    timestamp: new Date(e.timestamp ?? Date.now()).toISOString(),
    event: e.type,
    actor_id: e.actor?.id ?? '',
    actor_email: e.actor?.email ?? '',
    actor_type: e.actor?.type ?? 'anonymous',
    target_id: e.target?.id ?? '',
    target_type: e.target?.type ?? '',
    ip: e.context?.ip ?? '',
    user_agent: e.context?.userAgent ?? '',
    city: location?.city ?? '',
    country: location?.country ?? '',
    region: location?.region ?? '',
    lat: location ? location.lat : null,
    lng: location ? location.lng : null,
    result: e.result,
    trace_id: e.traceId,
    metadata: e.metadataJson || '{}',
    actor_name: e.actor?.name ?? '',
  };
}

/** The event a row was made from, and its location (absent when the ip had none). */
export function eventFromRow(r: LogRow): { event: events.AuthEvent; location: Location | undefined } {
  return {
    event: {
      id: r.id,
      environment: r.environment,
      type: r.event,
      timestamp: r.timestamp,
      actor: { ...(r.actor_id ? { id: r.actor_id } : {}), ...(r.actor_email ? { email: r.actor_email } : {}), type: r.actor_type, ...(r.actor_name ? { name: r.actor_name } : {}) },
      target: r.target_id ? { id: r.target_id, type: r.target_type } : undefined,
      context: { ip: r.ip, userAgent: r.user_agent },
      result: r.result,
      traceId: r.trace_id,
      metadataJson: r.metadata,
    },
    location: r.lat !== null && r.lng !== null ? { city: r.city, country: r.country, region: r.region, lat: r.lat, lng: r.lng } : undefined,
  };
}
