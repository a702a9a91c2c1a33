import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

const buckets = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

/** One Prometheus registry per process, with the process defaults and request metrics by route/method/status. */
export class Metrics {
  readonly registry = new Registry();
  readonly httpRequests: Counter<'route' | 'method' | 'status'>;
  readonly httpDuration: Histogram<'route' | 'method' | 'status'>;
  readonly grpcHandled: Counter<'method' | 'code'>;
  readonly grpcDuration: Histogram<'method' | 'code'>;

  constructor(service: string) {
    this.registry.setDefaultLabels({ service });
    collectDefaultMetrics({ register: this.registry });
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
    this.grpcHandled = new Counter({
      name: 'grpc_server_handled_total',
      help: 'gRPC calls handled by method and status code',
      labelNames: ['method', 'code'],
      registers: [this.registry],
    });
    this.grpcDuration = new Histogram({
      name: 'grpc_server_handling_seconds',
      help: 'gRPC call latency by method and status code',
      labelNames: ['method', 'code'],
      buckets,
      registers: [this.registry],
    });
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

  observeHttp(route: string, method: string, status: number, seconds: number): void {
    const labels = { route, method, status: String(status) };
    this.httpRequests.inc(labels);
    this.httpDuration.observe(labels, seconds);
  }

  observeGrpc(method: string, code: string, seconds: number): void {
    this.grpcHandled.inc({ method, code });
    this.grpcDuration.observe({ method, code }, seconds);
  }
}
