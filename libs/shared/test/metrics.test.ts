/** The metrics of every process: build info, scrape-time gauges (against a real PostgreSQL), certificate expiry. */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { generate } from 'selfsigned';
import { stopTestPostgres, testDatabase, type TestDatabase } from '@secsvc/dev/testing';
import { createPool, observePool, withStatementTimeout } from '../src/db';
import { createLogger } from '../src/logger';
import { Metrics, observeCertificateExpiry, parseMetricsText, type MetricSample } from '../src/metrics';
import { appendEvent, outboxDdl } from '../src/outbox';
import { observeOutboxBacklog } from '../src/outbox-relay';

const logger = createLogger('metrics-test', 'silent');
const RELEASE = (JSON.parse(readFileSync(path.join(__dirname, '..', 'package.json'), 'utf8')) as { version: string }).version;

/** The samples of `name` after one scrape. */
async function scrape(metrics: Metrics, name: string): Promise<MetricSample[]> {
  return parseMetricsText(await metrics.registry.metrics()).filter((s) => s.name === name);
}

describe('Metrics', () => {
  it('exposes secsvc_build_info = 1 with the release, the revision and the Node.js version, labelled by service', async () => {
    const before = process.env.SECSVC_REVISION;
    process.env.SECSVC_REVISION = 'abc1234';
    try {
      const [info] = await scrape(new Metrics('svc-a'), 'secsvc_build_info');
      expect(info).toEqual({ name: 'secsvc_build_info', labels: { version: RELEASE, revision: 'abc1234', nodejs: process.version, service: 'svc-a' }, value: 1 });
    } finally {
      if (before === undefined) delete process.env.SECSVC_REVISION;
      else process.env.SECSVC_REVISION = before;
    }
    expect((await scrape(new Metrics('svc-b'), 'secsvc_build_info'))[0]!.labels.revision).toBe(before || 'unknown');
  });

  it('labels HTTP requests by route, method and status, counting each request once', async () => {
    const metrics = new Metrics('http');
    metrics.observeHttp('/v1/users/:id', 'GET', 200, 0.01);
    metrics.observeHttp('/v1/users/:id', 'GET', 200, 0.02);
    metrics.observeHttp('/v1/users/:id', 'GET', 404, 0.01);
    const samples = await scrape(metrics, 'http_requests_total');
    expect(samples).toEqual([
      { name: 'http_requests_total', labels: { route: '/v1/users/:id', method: 'GET', status: '200', service: 'http' }, value: 2 },
      { name: 'http_requests_total', labels: { route: '/v1/users/:id', method: 'GET', status: '404', service: 'http' }, value: 1 },
    ]);
  });
});

describe('scrapedGauges', () => {
  const specs = { a: { name: 'test_a', help: 'a' }, b: { name: 'test_b', help: 'b', labelNames: ['state'] } };

  it('runs one refresh per scrape for all of its gauges', async () => {
    const metrics = new Metrics('scrape');
    let runs = 0;
    metrics.scrapedGauges('set', specs, async (g) => {
      runs++;
      g.a.set(runs);
      g.b.set({ state: 'x' }, runs * 10);
    });
    expect(await scrape(metrics, 'test_a')).toEqual([{ name: 'test_a', labels: { service: 'scrape' }, value: 1 }]);
    expect(runs).toBe(1);
    const text = await metrics.registry.metrics();
    expect(runs).toBe(2);
    expect(text).toMatch(/^test_a\{service="scrape"\} 2$/m);
    expect(text).toMatch(/^test_b\{state="x",service="scrape"\} 20$/m);
  });

  it('counts a failing and a hanging refresh, abandons the hanging one and refreshes again at the next scrape', async () => {
    const metrics = new Metrics('scrape');
    let mode: 'ok' | 'fail' | 'hang' = 'ok';
    let runs = 0;
    const hung: (() => void)[] = [];
    metrics.scrapedGauges(
      'test_set',
      specs,
      async (g) => {
        const m = mode;
        runs++;
        if (m === 'fail') throw new Error('database down (test)');
        if (m === 'hang') await new Promise<void>((r) => hung.push(r));
        g.a.set(m === 'hang' ? 7 : 5);
      },
      200,
    );
    // the counter alone (a whole scrape would refresh the gauges)
    const errors = async () => (await metrics.registry.getSingleMetric('metrics_refresh_errors_total')!.get()).values.map((v) => [v.labels.gauges, v.value]);
    expect(await errors()).toEqual([['test_set', 0]]);
    expect((await scrape(metrics, 'test_a'))[0]!.value).toBe(5);

    mode = 'fail';
    expect((await scrape(metrics, 'test_a'))[0]!.value).toBe(5);
    expect(await errors()).toEqual([['test_set', 1]]);

    mode = 'hang';
    runs = 0;
    const started = Date.now();
    expect((await scrape(metrics, 'test_a'))[0]!.value).toBe(5);
    expect(await errors()).toEqual([['test_set', 2]]);
    // the hung refresh does not hold the next scrape: it starts its own, and waits at most the timeout again
    expect((await scrape(metrics, 'test_a'))[0]!.value).toBe(5);
    expect(Date.now() - started).toBeLessThan(1_500);
    expect([runs, hung.length]).toEqual([2, 2]);
    expect(await errors()).toEqual([['test_set', 3]]);

    // back to normal: the next scrape refreshes, no new error
    mode = 'ok';
    expect((await scrape(metrics, 'test_a'))[0]!.value).toBe(5);
    expect(runs).toBe(3);
    expect(await errors()).toEqual([['test_set', 3]]);

    // an abandoned refresh that settles late leaves what it set for the next scrape, and counts nothing more
    mode = 'fail';
    hung[0]!();
    await new Promise((r) => setImmediate(r));
    expect((await scrape(metrics, 'test_a'))[0]!.value).toBe(7);
    expect(await errors()).toEqual([['test_set', 4]]);
    hung[1]!();
  });

  it('joins the refresh in flight: concurrent scrapes run one refresh', async () => {
    const metrics = new Metrics('scrape');
    let runs = 0;
    metrics.scrapedGauges('set', specs, async (g) => {
      runs++;
      await new Promise((r) => setTimeout(r, 50));
      g.a.set(runs);
    });
    const texts = await Promise.all([metrics.registry.metrics(), metrics.registry.metrics()]);
    expect(runs).toBe(1);
    for (const text of texts) expect(text).toMatch(/^test_a\{service="scrape"\} 1$/m);
  });
});

describe('observeCertificateExpiry', () => {
  it('sets tls_certificate_expiry_timestamp_seconds{use} to the notAfter of the certificate (the earliest of a chain)', async () => {
    const notAfterDate = new Date('2031-03-04T05:06:07Z');
    const later = await generate([{ name: 'commonName', value: 'later' }], { keySize: 2048, notAfterDate: new Date('2035-01-01T00:00:00Z') });
    const cert = await generate([{ name: 'commonName', value: 'sp' }], { keySize: 2048, notAfterDate });
    const metrics = new Metrics('tls');
    observeCertificateExpiry(metrics, 'saml_sp', `${later.cert}\n${cert.cert}`);
    observeCertificateExpiry(metrics, 'grpc', 'not a certificate');
    expect(await scrape(metrics, 'tls_certificate_expiry_timestamp_seconds')).toEqual([
      { name: 'tls_certificate_expiry_timestamp_seconds', labels: { use: 'saml_sp', service: 'tls' }, value: Math.floor(notAfterDate.getTime() / 1000) },
    ]);
  });
});

describe('gauges read from PostgreSQL', () => {
  let db: TestDatabase;
  let pool: pg.Pool;

  beforeAll(async () => {
    db = await testDatabase();
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    await c.query(outboxDdl('svc'));
    await c.end();
    pool = createPool(db.url, 3, logger, 'svc');
  }, 60_000);
  afterAll(async () => {
    await pool?.end();
    await db?.drop();
    await stopTestPostgres();
  });

  it('db_pool_connections{pool,state} and db_pool_max_connections{pool} follow the pools', async () => {
    const metrics = new Metrics('pools');
    const other = createPool(db.url, 2, logger);
    observePool(metrics, pool);
    observePool(metrics, other, 'bus');
    try {
      const held = await Promise.all([pool.connect(), pool.connect(), pool.connect()]);
      const waiting = pool.connect();
      const conns = await scrape(metrics, 'db_pool_connections');
      const value = (p: string, state: string) => conns.find((s) => s.labels.pool === p && s.labels.state === state)?.value;
      expect([value('main', 'total'), value('main', 'idle'), value('main', 'waiting')]).toEqual([3, 0, 1]);
      expect([value('bus', 'total'), value('bus', 'idle'), value('bus', 'waiting')]).toEqual([0, 0, 0]);
      expect(await scrape(metrics, 'db_pool_max_connections')).toEqual([
        { name: 'db_pool_max_connections', labels: { pool: 'main', service: 'pools' }, value: 3 },
        { name: 'db_pool_max_connections', labels: { pool: 'bus', service: 'pools' }, value: 2 },
      ]);
      for (const c of held) c.release();
      (await waiting).release();
      const after = await scrape(metrics, 'db_pool_connections');
      expect(after.find((s) => s.labels.pool === 'main' && s.labels.state === 'idle')?.value).toBe(3);
    } finally {
      await other.end();
    }
  });

  it('outbox_backlog_events and outbox_oldest_event_age_seconds count the unpublished rows (0 when none)', async () => {
    const metrics = new Metrics('outbox');
    observeOutboxBacklog(metrics, pool, 'svc');
    const gauges = async () => [(await scrape(metrics, 'outbox_backlog_events'))[0]!.value, (await scrape(metrics, 'outbox_oldest_event_age_seconds'))[0]!.value];
    expect(await gauges()).toEqual([0, 0]);
    const event = { environment: 'live', type: 'user.updated', actor: { id: 'key_1', type: 'api_key' }, context: { ip: '127.0.0.1', userAgent: 'jest' }, result: 'success' as const, traceId: 'req_t' };
    for (let i = 0; i < 3; i++) await appendEvent(pool, event);
    await pool.query(`UPDATE outbox SET created_at = now() - interval '90 seconds' WHERE seq = (SELECT min(seq) FROM outbox)`);
    const [backlog, age] = await gauges();
    expect(backlog).toBe(3);
    expect(age).toBeGreaterThanOrEqual(90);
    expect(age).toBeLessThan(120);
    await pool.query('UPDATE outbox SET published_at = now()');
    expect(await gauges()).toEqual([0, 0]);
  });

  it('runs the gauge queries with a statement timeout of their own: a stuck query is cancelled and counted, the pool keeps its settings', async () => {
    await expect(withStatementTimeout(pool, 100, (c) => c.query('SELECT pg_sleep(5)'))).rejects.toMatchObject({ code: '57014' });
    expect((await pool.query<{ statement_timeout: string }>('SHOW statement_timeout')).rows[0]!.statement_timeout).toBe('0');

    const metrics = new Metrics('outbox');
    observeOutboxBacklog(metrics, pool, 'svc');
    const locker = new pg.Client({ connectionString: db.url });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE svc.outbox IN ACCESS EXCLUSIVE MODE');
      await scrape(metrics, 'outbox_backlog_events');
      const errors = await metrics.registry.getSingleMetric('metrics_refresh_errors_total')!.get();
      expect(errors.values.map((v) => [v.labels.gauges, v.value])).toEqual([['outbox', 1]]);
      // PostgreSQL cancelled the waiting query (statement timeout), so no connection of the pool stays stuck on the lock
      const waiting = async () =>
        Number((await locker.query<{ n: string }>(`SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%published_at IS NULL%'`)).rows[0]!.n);
      const deadline = Date.now() + 5_000;
      while ((await waiting()) > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      expect(await waiting()).toBe(0);
    } finally {
      await locker.query('ROLLBACK');
      await locker.end();
    }
    expect((await scrape(metrics, 'outbox_backlog_events'))[0]!.value).toBe(0);
  }, 20_000);
});
