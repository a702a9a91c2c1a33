import type { Link, Span } from '@opentelemetry/api';
import type { BusRecord } from '../bus/port';
import { failSpan, SpanKind, startSpan, tracingEnabled, withSpan } from './tracer';
import { parseTraceparent } from './traceparent';

/** Most links a batch span keeps to the traces of its records. */
const MAX_LINKS = 128;

/**
 * Handles a batch of bus records as spans, when tracing is on: one `process <topic>` consumer span per record
 * that carries a traceparent, a child of the span that wrote it (so the trace of the request that caused an
 * event ends where the event is stored), lasting until `handle` settled; and one batch span, linked to those
 * traces, as the current context of `handle` (its queries). Off: just `handle`.
 */
export function traceBatch<T>(topic: string, records: BusRecord[], handle: () => Promise<T>): Promise<T> {
  if (!tracingEnabled()) return handle();
  const spans: Span[] = [];
  const links: Link[] = [];
  for (const record of records) {
    const parent = parseTraceparent(record.traceparent);
    if (!parent) continue;
    spans.push(
      startSpan(`process ${topic}`, parent, {
        kind: SpanKind.CONSUMER,
        attributes: { 'messaging.operation.type': 'process', 'messaging.destination.name': topic, 'messaging.message.id': record.id },
      }),
    );
    if (links.length < MAX_LINKS) links.push({ context: parent });
  }
  const batch = withSpan(`process ${topic} batch`, undefined, {
    kind: SpanKind.CONSUMER,
    links,
    attributes: { 'messaging.operation.type': 'process', 'messaging.destination.name': topic, 'messaging.batch.message_count': records.length },
  }, handle);
  return batch.then(
    (v) => {
      for (const s of spans) s.end();
      return v;
    },
    (err: unknown) => {
      for (const s of spans) {
        failSpan(s, err);
        s.end();
      }
      throw err;
    },
  );
}
