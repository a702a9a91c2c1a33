#!/usr/bin/env node
// bench/audit-search: which ClickHouse SQL form answers each kind of search clause fastest, on embedded chdb
// (after `npm run build`). Fills the audit_logs table of the schema migrations (search_text and its text
// index) with BENCH_ROWS generated rows, then times each form BENCH_RUNS times, as count() (every
// match, as totalHits needs) and as a newest-first page of 50, with ClickHouse's query condition cache off:
//   terms (hasToken), phrases (hasPhrase), and prefixes four ways: the compiler's match() with a
//   token-boundary regex, LIKE '%p%' (answered by the text index) + match(), arrayExists(startsWith) over
//   splitByNonAlpha, LIKE + arrayExists.
//   npm run bench:audit-search            (BENCH_ROWS=200000 BENCH_RUNS=5 for a quick look)
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { performance } = require('node:perf_hooks');
const { openClickHouse, migrateClickHouse, compileSearchQuery, parseSearchQuery } = require('../libs/audit-store/dist');

const ROWS = Number(process.env.BENCH_ROWS ?? 2_000_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 15);
const SEP = '[\\x00-\\x2f\\x3a-\\x40\\x5b-\\x60\\x7b-\\x7f]';

const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
};

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-search-'));
  const ch = await openClickHouse({ path: dir });
  // The query condition cache would answer every repetition of a WHERE from memory: off, so each run filters.
  const settings = { use_query_condition_cache: 0 };
  const q = async (query, params = {}) => (await ch.query({ query, query_params: params, format: 'JSONEachRow', clickhouse_settings: settings })).json();
  try {
    await migrateClickHouse(ch);
    let t = performance.now();
    // 20,000 actors, one session per entry, 50,000 addresses, 7 event kinds, 5 user agents; 10 % in `test`.
    await ch.command({
      query: `INSERT INTO audit_logs (id, environment, timestamp, event, actor_id, actor_email, actor_type, target_id, target_type,
                ip, user_agent, city, country, region, lat, lng, result, trace_id, metadata)
        SELECT concat('log_', leftPad(toString(number), 12, '0')), if(number % 10 = 0, 'test', 'live'),
          toDateTime64('2026-10-01 00:00:00', 3, 'UTC') + toIntervalMillisecond(number * 500),
          ['user.login', 'user.logout', 'user.login', 'user.password_reset.failed', 'api_key.created', 'user.updated', 'authz.denied'][number % 7 + 1],
          concat('user_', lower(hex(cityHash64(number % 20000)))), concat('name', toString(number % 20000), '@example.com'), 'user',
          concat('ses_', lower(hex(cityHash64(number, 1)))), 'session', IPv4NumToString(toUInt32(cityHash64(number % 50000, 2) % 4294967295)),
          ['Mozilla/5.0 (X11; Linux x86_64) Firefox/120.0', 'Mozilla/5.0 (Macintosh) Safari/605.1.15', 'curl/8.5.0', 'Go-http-client/1.1', 'okhttp/4.12.0'][number % 5 + 1],
          ['London', 'Berlin', 'Paris', 'Zürich', 'İstanbul'][number % 5 + 1], ['GB', 'DE', 'FR', 'CH', 'TR'][number % 5 + 1], '', NULL, NULL,
          if(number % 9 = 0, 'failure', 'success'), concat('req_', toString(number)), '{}'
        FROM numbers(${ROWS})`,
      clickhouse_settings: { max_insert_threads: 1 },
    });
    const insertMs = performance.now() - t;
    const [{ parts }] = await q(`SELECT count() AS parts FROM system.parts WHERE table = 'audit_logs' AND active`);
    // one session of a `live` entry, for the selective term and prefix
    const [{ target }] = await q(`SELECT target_id AS target FROM audit_logs WHERE id = {id:String}`, { id: `log_${String(Math.floor(ROWS * 0.6) + 7).padStart(12, '0')}` });
    const hex = target.slice(4);
    process.stdout.write(`rows ${ROWS} inserted in ${(insertMs / 1000).toFixed(1)} s, ${parts} parts\n`);

    const base = `environment = 'live' AND timestamp >= toDateTime64('2026-10-01 00:00:00', 3, 'UTC')`;
    const compiled = (text) => compileSearchQuery(parseSearchQuery(text));
    const prefixForms = (p) => ({
      'match (compiler)': compiled(`${p}*`),
      'LIKE + match': { where: `search_text LIKE {l:String} AND match(search_text, {r:String})`, params: { l: `%${p}%`, r: `(?:^|${SEP})${p}` } },
      'arrayExists(startsWith)': { where: `arrayExists(t -> startsWith(t, {p:String}), splitByNonAlpha(search_text))`, params: { p } },
      'LIKE + arrayExists': { where: `search_text LIKE {l:String} AND arrayExists(t -> startsWith(t, {p:String}), splitByNonAlpha(search_text))`, params: { l: `%${p}%`, p } },
    });
    const cases = [
      ['term, selective (one session)', { term: compiled(hex) }],
      ['term, common (login)', { term: compiled('login') }],
      ['phrase, selective (an email)', { phrase: compiled('name12345@example.com') }],
      ['phrase, common ("user login")', { phrase: compiled('"user login"') }],
      [`prefix, selective (${hex.slice(0, 10)}*)`, prefixForms(hex.slice(0, 10))],
      ['prefix, medium (name1234*)', prefixForms('name1234')],
      ['prefix, common (logi*)', prefixForms('logi')],
    ];
    const results = [];
    for (const [label, forms] of cases) {
      for (const [form, { where, params }] of Object.entries(forms)) {
        const row = { label, form };
        for (const [kind, sql] of [
          ['count', `SELECT count() AS n FROM audit_logs WHERE ${base} AND (${where})`],
          ['page', `SELECT id FROM audit_logs WHERE ${base} AND (${where}) ORDER BY timestamp DESC, id DESC LIMIT 50`],
        ]) {
          const times = [];
          let answer;
          for (let i = 0; i < RUNS + 1; i++) {
            t = performance.now();
            answer = await q(sql, params);
            if (i > 0) times.push(performance.now() - t); // the first run warms caches
          }
          row[kind] = { p50: quantile(times, 0.5), p99: quantile(times, 0.99), n: kind === 'count' ? Number(answer[0].n) : answer.length };
        }
        results.push(row);
        process.stdout.write(
          `${label.padEnd(40)} ${form.padEnd(26)} hits ${String(row.count.n).padStart(7)}  count p50 ${row.count.p50.toFixed(1).padStart(7)} ms p99 ${row.count.p99.toFixed(1).padStart(7)} ms  page p50 ${row.page.p50.toFixed(1).padStart(7)} ms p99 ${row.page.p99.toFixed(1).padStart(7)} ms\n`,
        );
      }
    }
    process.stdout.write(`\n| clause | form | hits | count() p50 / p99 ms | page of 50 p50 / p99 ms |\n|---|---|---:|---:|---:|\n`);
    for (const r of results) {
      process.stdout.write(`| ${r.label} | ${r.form} | ${r.count.n} | ${r.count.p50.toFixed(0)} / ${r.count.p99.toFixed(0)} | ${r.page.p50.toFixed(0)} / ${r.page.p99.toFixed(0)} |\n`);
    }
  } finally {
    await ch.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  process.stderr.write(`${err.stack ?? err}\n`);
  process.exit(1);
});
