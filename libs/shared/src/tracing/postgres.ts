import type pg from 'pg';
import { childSpan, endWith, SpanKind, tracingEnabled } from './tracer';

/** The longest statement text a span keeps. */
const STATEMENT_MAX = 2000;

type Query = (...args: unknown[]) => unknown;

/** A query span's name: the statement's first keyword (SELECT, INSERT, BEGIN...), low cardinality. */
const operationOf = (text: string) => /^\s*([A-Za-z]+)/.exec(text)?.[1]?.toUpperCase() ?? 'QUERY';

/**
 * Wraps `target.query` (a pool's or a connection's) so each promise-form query run inside a trace is a
 * client span: db.system postgresql, the statement text (never the parameter values). Callback and
 * submittable (cursor, stream) forms pass through untouched; so does everything outside a trace.
 */
function wrapQuery(target: { query: Query }, namespace: string | undefined): void {
  const query = target.query;
  target.query = function (this: unknown, ...args: unknown[]) {
    const first = args[0] as { text?: unknown; submit?: unknown } | string | undefined;
    if (typeof args[args.length - 1] === 'function' || (typeof first === 'object' && typeof first?.submit === 'function')) return query.apply(this, args);
    const text = typeof first === 'string' ? first : typeof first?.text === 'string' ? first.text : '';
    const span = childSpan(operationOf(text), {
      kind: SpanKind.CLIENT,
      attributes: {
        'db.system': 'postgresql',
        'db.system.name': 'postgresql',
        'db.query.text': text.slice(0, STATEMENT_MAX),
        ...(namespace && { 'db.namespace': namespace }),
      },
    });
    return span ? endWith(span, query.apply(this, args) as Promise<unknown>) : query.apply(this, args);
  };
}

/**
 * Traces a pool's queries, `pool.query` and those of the connections it hands out (transactions), when
 * tracing is on; otherwise leaves the pool as it is. pg's pool.query runs its connection's query in callback
 * form, so a query is never counted twice.
 */
export function tracePool(pool: pg.Pool, schema?: string): void {
  if (!tracingEnabled()) return;
  wrapQuery(pool as unknown as { query: Query }, schema);
  pool.on('connect', (client) => wrapQuery(client as unknown as { query: Query }, schema));
}
