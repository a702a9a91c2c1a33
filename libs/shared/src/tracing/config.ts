import { z } from 'zod';

const url = z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' });

/**
 * The standard OpenTelemetry variables a process reads (part of every app's config): tracing is on when
 * OTEL_TRACES_EXPORTER is `otlp`. Headers and resource attributes are `key=value` lists, URL-encoded values
 * (malformed entries are ignored: a header may carry a credential, so no value is ever echoed in an error).
 */
export const tracingConfig = {
  OTEL_TRACES_EXPORTER: z.enum(['none', 'otlp'], { error: 'must be none or otlp' }).default('none'),
  OTEL_EXPORTER_OTLP_ENDPOINT: url.default('http://localhost:4318'),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: url.optional(),
  OTEL_EXPORTER_OTLP_PROTOCOL: z.enum(['http/protobuf', 'http/json'], { error: 'must be http/protobuf or http/json' }).default('http/protobuf'),
  OTEL_EXPORTER_OTLP_HEADERS: z.string().default(''),
  OTEL_SERVICE_NAME: z.string().optional(),
  OTEL_RESOURCE_ATTRIBUTES: z.string().default(''),
  OTEL_TRACES_SAMPLER: z
    .enum(['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'])
    .default('parentbased_always_on'),
  OTEL_TRACES_SAMPLER_ARG: z
    .string()
    .regex(/^(0(\.\d+)?|1(\.0+)?)$/, 'must be a ratio from 0 to 1')
    .transform(Number)
    .optional(),
};

export type TracingSettings = z.infer<z.ZodObject<typeof tracingConfig>>;

/** `k1=v1,k2=v2` (W3C baggage-like, values URL-encoded) as a record; entries without a key or `=` are skipped. */
export function parseKeyValues(list: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const entry of list.split(',')) {
    const at = entry.indexOf('=');
    if (at <= 0) continue;
    const key = entry.slice(0, at).trim();
    let value = entry.slice(at + 1).trim();
    try {
      value = decodeURIComponent(value);
    } catch {
      continue;
    }
    if (key) out[key] = value;
  }
  return out;
}

/** Where spans are sent: the traces endpoint as given, else the base endpoint's /v1/traces. */
export function tracesUrl(s: Partial<Pick<TracingSettings, 'OTEL_EXPORTER_OTLP_ENDPOINT' | 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'>>): string {
  return s.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? `${(s.OTEL_EXPORTER_OTLP_ENDPOINT ?? 'http://localhost:4318').replace(/\/+$/, '')}/v1/traces`;
}
