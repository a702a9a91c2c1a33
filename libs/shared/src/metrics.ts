import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

const buckets = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

/** go-grpc-prometheus's grpc_type values. */
export type GrpcType = 'unary' | 'server_stream' | 'client_stream' | 'bidi_stream';

type GrpcLabels = 'grpc_type' | 'grpc_service' | 'grpc_method';

/** Records one finished call of a method: its status code name (OK, NOT_FOUND, ...) and its duration. */
export type GrpcObserver = (code: string, seconds: number) => void;

/** The release (libs/shared's package.json version, which every image carries), else `unknown`. */
function releaseVersion(): string {
  try {
    return (JSON.parse(readFileSync(path.join(__dirname, '..', 'package.json'), 'utf8')) as { version?: string }).version ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

/** The gauges of `Metrics.scrapedGauges`: name and help, and label names for labelled ones. */
export interface GaugeSpec {
  name: string;
  help: string;
  labelNames?: readonly string[];
}

/**
 * `refresh` as the scrape-time source of some gauges: every gauge's collect calls the returned function,
 * which runs `refresh` once for all of them (callers joining the one in flight) and waits for it at most
 * `timeoutMs`. A refresh that fails, or has not settled by then, is reported to `onError` and the scrape goes
 * on with the gauges' last values. A late refresh is abandoned: the next scrape starts a new one rather than
 * waiting on it (its queries carry a statement timeout of their own, GAUGE_STATEMENT_TIMEOUT_MS, so abandoned
 * ones do not pile up); what it sets when it does settle stays for the next scrape.
 */
export function refreshOnScrape(refresh: () => Promise<void>, timeoutMs = 2_000, onError?: (reason: 'failed' | 'timeout') => void): () => Promise<void> {
  let running: Promise<void> | undefined;
  return () => {
    if (!running) {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<'timeout'>((resolve) => {
        timer = setTimeout(() => resolve('timeout'), timeoutMs);
        timer.unref();
      });
      const current: Promise<void> = Promise.race([
        Promise.resolve()
          .then(refresh)
          .then(
            () => 'ok' as const,
            () => 'failed' as const,
          ),
        late,
      ]).then((outcome) => {
        clearTimeout(timer);
        if (running === current) running = undefined;
        if (outcome !== 'ok') onError?.(outcome);
      });
      running = current;
    }
    return running;
  };
}

/**
 * One Prometheus registry per process: the process defaults, `secsvc_build_info`, HTTP requests by
 * route/method/status and gRPC calls as go-grpc-prometheus names them, every series labelled `service`.
 */
export class Metrics {
  readonly registry = new Registry();
  readonly httpRequests: Counter<'route' | 'method' | 'status'>;
  readonly httpDuration: Histogram<'route' | 'method' | 'status'>;
  private readonly grpc: Record<'server' | 'client', { handled: Counter<GrpcLabels | 'grpc_code'>; seconds: Histogram<GrpcLabels> }>;
  /** Per side, type and method path: the observer with its label children (no label hashing per call). */
  private readonly grpcObservers = new Map<string, GrpcObserver>();

  constructor(service: string) {
    this.registry.setDefaultLabels({ service });
    collectDefaultMetrics({ register: this.registry });
    new Gauge({
      name: 'secsvc_build_info',
      help: 'Always 1: the release, source revision (SECSVC_REVISION) and Node.js version of this process',
      labelNames: ['version', 'revision', 'nodejs'],
      registers: [this.registry],
    }).set({ version: releaseVersion(), revision: process.env.SECSVC_REVISION || 'unknown', nodejs: process.version }, 1);
    this.httpRequests = new Counter({
      name: 'http_requests_total',
      help: 'HTTP requests by route, method and status',
      labelNames: ['route', 'method', 'status'],
      registers: [this.registry],
    });
    this.httpDuration = new Histogram({
      name: 'http_request_duration_seconds',
      help: 'HTTP request latency by route, method and status',
      labelNames: ['route', 'method', 'status'],
      buckets,
      registers: [this.registry],
    });
    const side = (s: 'server' | 'client', what: string) => ({
      handled: new Counter({
        name: `grpc_${s}_handled_total`,
        help: `gRPC calls ${what}, by type, service, method and status code`,
        labelNames: ['grpc_type', 'grpc_service', 'grpc_method', 'grpc_code'],
        registers: [this.registry],
      }),
      seconds: new Histogram({
        name: `grpc_${s}_handling_seconds`,
        help: `Duration of gRPC calls ${what} until their status, by type, service and method`,
        labelNames: ['grpc_type', 'grpc_service', 'grpc_method'],
        buckets,
        registers: [this.registry],
      }),
    });
    this.grpc = { server: side('server', 'this server handled'), client: side('client', 'this process made') };
  }

  private readonly counters = new Map<string, Counter<string>>();

  /** A counter in this registry, made on first use (the same name gives the same counter). */
  counter<L extends string>(name: string, help: string, labelNames: readonly L[]): Counter<L> {
    let c = this.counters.get(name);
    if (!c) {
      c = new Counter({ name, help, labelNames: [...labelNames], registers: [this.registry] });
      this.counters.set(name, c);
    }
    return c as Counter<L>;
  }

  private readonly gauges = new Map<string, Gauge<string>>();

  /** A gauge in this registry, made on first use (the same name gives the same gauge). */
  gauge<L extends string = never>(name: string, help: string, labelNames: readonly L[] = []): Gauge<L> {
    let g = this.gauges.get(name);
    if (!g) {
      g = new Gauge({ name, help, labelNames: [...labelNames], registers: [this.registry] });
      this.gauges.set(name, g);
    }
    return g as Gauge<L>;
  }

  /**
   * Gauges computed when /metrics is scraped, never per request: `refresh` (a query) sets them, once per
   * scrape for all of them, within `timeoutMs` (see refreshOnScrape). A refresh that fails or is late leaves
   * the gauges at their last values and counts in metrics_refresh_errors_total{gauges=`set`} (the alert
   * SecsvcMetricsStale), whose series exists at 0 from the start. A later call with the same names replaces
   * the earlier gauges (one owner per process).
   */
  scrapedGauges<K extends string>(
    set: string,
    specs: Record<K, GaugeSpec>,
    refresh: (gauges: Record<K, Gauge<string>>) => Promise<void>,
    timeoutMs?: number,
  ): Record<K, Gauge<string>> {
    const errors = this.counter('metrics_refresh_errors_total', 'Scrape-time gauge refreshes that failed or timed out (the gauges kept their last values), by gauge set', ['gauges']).labels({ gauges: set });
    errors.inc(0);
    const gauges = {} as Record<K, Gauge<string>>;
    const collect = refreshOnScrape(() => refresh(gauges), timeoutMs, () => errors.inc());
    for (const key of Object.keys(specs) as K[]) {
      const { name, help, labelNames = [] } = specs[key];
      this.registry.removeSingleMetric(name);
      gauges[key] = new Gauge({ name, help, labelNames: [...labelNames], registers: [this.registry], collect });
    }
    return gauges;
  }

  /** Per route, method and status: the label children of the HTTP metrics (no label hashing per request). */
  private readonly httpChildren = new Map<string, { count: Counter.Internal; time: Histogram.Internal<'route' | 'method' | 'status'> }>();

  observeHttp(route: string, method: string, status: number, seconds: number): void {
    const key = `${status} ${method} ${route}`;
    let child = this.httpChildren.get(key);
    if (!child) {
      const labels = { route, method, status: String(status) };
      child = { count: this.httpRequests.labels(labels), time: this.httpDuration.labels(labels) };
      this.httpChildren.set(key, child);
    }
    child.count.inc();
    child.time.observe(seconds);
  }

  /**
   * The observer of one gRPC method (`path` = /package.Service/Method) on this process's server or client
   * side: made once per method, with its histogram child bound and its counter children kept per code.
   */
  grpcObserver(side: 'server' | 'client', path: string, type: GrpcType = 'unary'): GrpcObserver {
    const key = `${side} ${type} ${path}`;
    let observer = this.grpcObservers.get(key);
    if (!observer) {
      const slash = path.lastIndexOf('/');
      const labels = { grpc_type: type, grpc_service: path.slice(path.startsWith('/') ? 1 : 0, Math.max(slash, 0)), grpc_method: path.slice(slash + 1) };
      const { handled, seconds } = this.grpc[side];
      const timer = seconds.labels(labels);
      const byCode = new Map<string, Counter.Internal>();
      observer = (code, s) => {
        let c = byCode.get(code);
        if (!c) byCode.set(code, (c = handled.labels({ ...labels, grpc_code: code })));
        c.inc();
        timer.observe(s);
      };
      this.grpcObservers.set(key, observer);
    }
    return observer;
  }

  /** One call this process's gRPC server handled (grpc_server_handled_total, grpc_server_handling_seconds). */
  observeGrpc(path: string, code: string, seconds: number, type: GrpcType = 'unary'): void {
    this.grpcObserver('server', path, type)(code, seconds);
  }
}

/** What a process loads a TLS certificate for (the `use` label of tls_certificate_expiry_timestamp_seconds). */
export type CertificateUse = 'grpc' | 'saml_sp' | 'clickhouse';

/**
 * tls_certificate_expiry_timestamp_seconds{use}: when the certificate `pem` holds stops being valid (Unix
 * seconds; of a chain, the earliest notAfter). A PEM without a readable certificate sets nothing.
 */
export function observeCertificateExpiry(metrics: Metrics, use: CertificateUse, pem: string | Buffer): void {
  const blocks = String(pem).match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  const expiries: number[] = [];
  for (const block of blocks) {
    try {
      expiries.push(Date.parse(new X509Certificate(block).validTo) / 1000);
    } catch {
      // not a certificate: nothing to report for it
    }
  }
  if (expiries.length === 0) return;
  metrics
    .gauge('tls_certificate_expiry_timestamp_seconds', 'When a TLS certificate this process loaded expires (notAfter, Unix seconds), by use', ['use'])
    .set({ use }, Math.min(...expiries));
}

/** A metric a process exposes: its name and label names (besides `service`), and when it exists only in some setups. */
export interface MetricSpec {
  name: string;
  labels: readonly string[];
  /** Present only with this (else always, once the process did what the metric counts). */
  requires?: 'tls' | 'saml_sp' | 'audit_grpc_source';
}

const m = (name: string, labels: readonly string[] = [], requires?: MetricSpec['requires']): MetricSpec => ({ name, labels, ...(requires && { requires }) });
const GRPC = ['grpc_type', 'grpc_service', 'grpc_method'];
const POOLS = [m('db_pool_connections', ['pool', 'state']), m('db_pool_max_connections', ['pool'])];
const GRPC_SERVER = [m('grpc_server_handled_total', [...GRPC, 'grpc_code']), m('grpc_server_handling_seconds', GRPC), m('tls_certificate_expiry_timestamp_seconds', ['use'], 'tls')];
/** Counted by every process with scrape-time gauges (Metrics.scrapedGauges). */
const REFRESH_ERRORS = m('metrics_refresh_errors_total', ['gauges']);
const OUTBOX = [m('outbox_backlog_events'), m('outbox_oldest_event_age_seconds'), m('outbox_relayed_total', ['schema']), REFRESH_ERRORS];
const BUILD = m('secsvc_build_info', ['version', 'revision', 'nodejs']);

/**
 * The metrics each process exposes on its admin /metrics (docs/operations.md "Metrics"; alerts and dashboards
 * use these names). The end-to-end test scrapes every process of the local stack against this list.
 */
export const SERVICE_METRICS: Readonly<Record<'gateway' | 'identity' | 'policy' | 'audit' | 'export-worker', readonly MetricSpec[]>> = {
  gateway: [
    BUILD,
    m('http_requests_total', ['route', 'method', 'status']),
    m('http_request_duration_seconds', ['route', 'method', 'status']),
    m('grpc_client_handled_total', [...GRPC, 'grpc_code']),
    m('grpc_client_handling_seconds', GRPC),
    m('ratelimit_decisions_total', ['plan', 'decision']),
    m('ratelimit_store_errors_total'),
    m('credential_cache_requests_total', ['cache', 'result']),
    m('tls_certificate_expiry_timestamp_seconds', ['use'], 'saml_sp'),
  ],
  identity: [BUILD, ...POOLS, ...GRPC_SERVER, ...OUTBOX, m('oauth_signing_key_age_seconds'), m('identity_mail_queue_depth'), m('identity_mail_queue_oldest_seconds')],
  policy: [BUILD, ...POOLS, ...GRPC_SERVER, ...OUTBOX],
  audit: [
    BUILD,
    ...POOLS,
    ...GRPC_SERVER,
    ...OUTBOX,
    m('bus_consumer_lag_events', ['topic', 'group']),
    m('audit_events_stored_total'),
    m('audit_events_duplicate_total'),
  ],
  'export-worker': [
    BUILD,
    ...POOLS,
    m('grpc_client_handled_total', [...GRPC, 'grpc_code'], 'audit_grpc_source'),
    m('grpc_client_handling_seconds', GRPC, 'audit_grpc_source'),
    m('export_queue_depth', ['state']),
    m('export_queue_oldest_age_seconds'),
    REFRESH_ERRORS,
    m('export_jobs_total', ['outcome']),
    m('export_rows_total'),
    m('tls_certificate_expiry_timestamp_seconds', ['use'], 'tls'),
  ],
};

/** One sample of Prometheus text: the series name (with _bucket/_sum/_count), its labels and its value. */
export interface MetricSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of Prometheus text exposition (what /metrics answers), for checks and tests. */
export function parseMetricsText(text: string): MetricSample[] {
  const samples: MetricSample[] = [];
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const [, k, v] of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[k!] = v!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return samples;
}
