import { randomFillSync } from 'node:crypto';
import { TraceFlags, type SpanContext } from '@opentelemetry/api';

/** The W3C Trace Context header (https://www.w3.org/TR/trace-context/), the same name in HTTP and gRPC metadata. */
export const TRACEPARENT = 'traceparent';

// version-traceid-parentid-flags; a future version may append fields after the flags.
const TRACEPARENT_RE = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);

/** A W3C trace id: 32 lowercase hex digits, not all zero. */
export const isTraceId = (value: unknown): value is string => typeof value === 'string' && /^[0-9a-f]{32}$/.test(value) && value !== ZERO_TRACE;

/**
 * The span context of a `traceparent` value, or undefined when it is absent or invalid (the receiver then
 * starts a new trace, as the standard says). Version ff and all-zero ids are invalid; version 00 has exactly
 * four fields.
 */
export function parseTraceparent(value: string | undefined | null): SpanContext | undefined {
  if (!value || value.length > 512) return undefined;
  const m = TRACEPARENT_RE.exec(value.trim());
  if (!m) return undefined;
  const [, version, traceId, spanId, flags, rest] = m as unknown as [string, string, string, string, string, string | undefined];
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined;
  if (traceId === ZERO_TRACE || spanId === ZERO_SPAN) return undefined;
  return { traceId, spanId, traceFlags: parseInt(flags, 16) & TraceFlags.SAMPLED, isRemote: true };
}

/** The `traceparent` value (version 00) of a span context. */
export function formatTraceparent(ctx: SpanContext): string {
  return `00-${ctx.traceId}-${ctx.spanId}-${ctx.traceFlags & TraceFlags.SAMPLED ? '01' : '00'}`;
}

// Random bytes drawn in blocks: one system call per 256 new traces rather than one each (~3 µs per request).
const ID_BYTES = 24;
const pool = Buffer.alloc(ID_BYTES * 256);
let used = pool.length;

/**
 * The share of new traces marked sampled where a trace starts (OTEL_TRACES_SAMPLER: 1 for always_on, 0 for
 * always_off, the ratio of traceidratio), set by startTracing whether or not this process exports: the edge
 * decides once, and the services' parent-based samplers follow its flag.
 */
let sampleRatio = 1;
export function setSampleRatio(ratio: number): void {
  sampleRatio = Math.min(1, Math.max(0, ratio));
}

/** The edge's sampling decision for a trace id (its last 8 hex digits against the ratio). */
export function sampledFlag(traceId: string): number {
  if (sampleRatio >= 1) return TraceFlags.SAMPLED;
  if (sampleRatio <= 0) return TraceFlags.NONE;
  return parseInt(traceId.slice(-8), 16) / 0x1_0000_0000 < sampleRatio ? TraceFlags.SAMPLED : TraceFlags.NONE;
}

/** A new trace: random ids, sampled or not by the edge's decision (sampledFlag). */
export function newTraceContext(): SpanContext {
  if (used === pool.length) {
    randomFillSync(pool);
    used = 0;
  }
  const at = used;
  used += ID_BYTES;
  const traceId = pool.toString('hex', at, at + 16);
  return { traceId, spanId: pool.toString('hex', at + 16, at + ID_BYTES), traceFlags: sampledFlag(traceId) };
}
