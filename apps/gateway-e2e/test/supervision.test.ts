/**
 * The local stack supervises its apps: a child killed with SIGKILL under a steady load of writes is started
 * again by the launcher (backoff with jitter), the others keep running, the API answers 503 with Retry-After
 * (never a 500) while it is down, and every write it acknowledged is there afterwards.
 */
import type { AppName, LocalStack, RestartDecision } from '@secsvc/shared/stack';
import { apiClient, eventually, startTestStack, type Api } from './support';

jest.setTimeout(180_000);

const KEY = 'svc_sk_' + 'supervisionTests'.repeat(3);
let stack: LocalStack;
let api: Api;
let stop: (() => Promise<void>) | undefined;
const restarts: { app: AppName | 'postgres'; decision: RestartDecision }[] = [];

beforeAll(async () => {
  ({ stack, api, stop } = await startTestStack('supervision', KEY, {}, { onRestart: (app, _exit, decision) => restarts.push({ app, decision }) }));
  // A key whose rate limit the retries of an outage cannot reach.
  const key = (await api('POST', '/api-keys', { name: 'supervision load', type: 'secret', plan: 'enterprise', rateLimit: 1_000_000 })).body.data.key;
  api = apiClient(stack.baseUrl, key);
});

afterAll(async () => {
  await stop?.();
});

/** Creates users one after another until `until` resolves; every answer's status, and the ids acknowledged. */
async function writeWhile(until: Promise<unknown>, prefix: string) {
  const statuses: number[] = [];
  const acknowledged: string[] = [];
  let retryAfterMissing = 0;
  let done = false;
  void until.finally(() => (done = true));
  for (let i = 0; !done; i++) {
    // A gateway that is down refuses the connection (or drops it): status 0, nothing acknowledged.
    const res = await api('POST', '/users', { email: `${prefix}${i}@example.com`, name: `${prefix} ${i}` }).catch(() => ({ status: 0, headers: new Headers(), body: undefined }));
    statuses.push(res.status);
    if (res.status === 201) acknowledged.push(res.body.data.id);
    if (res.status === 503 && !res.headers.get('retry-after')) retryAfterMissing++;
    if (res.status !== 201) await new Promise((r) => setTimeout(r, 50));
  }
  return { statuses, acknowledged, retryAfterMissing };
}

/** The user.created entries of the log (every page), once they include all of `ids`. */
async function loggedUsers(ids: string[]) {
  return eventually(
    async () => {
      const out: { target?: { id: string } }[] = [];
      let cursor = '';
      for (;;) {
        const res = await api('GET', `/logs?events=user.created&limit=100${cursor ? `&cursor=${cursor}` : ''}`);
        // Right after a restart a read may still be refused (503): try again.
        if (res.status !== 200) return [];
        out.push(...res.body.data);
        if (!res.body.pagination.hasMore) return out;
        cursor = res.body.pagination.nextCursor;
      }
    },
    (es) => ids.every((id) => es.some((e) => e.target?.id === id)),
    30_000,
  );
}

// identity and the gateway are on the write path (their outage is seen as 503s or refused connections); policy,
// audit and the export worker are not (writes go on, and audit catches up from the outbox).
it.each([
  ['identity', true],
  ['gateway', true],
  ['policy', false],
  ['audit', false],
  ['export-worker', false],
] as [AppName, boolean][])('%s killed with SIGKILL is started again by itself; writes go on; nothing acknowledged is lost or logged twice', async (app, onWritePath) => {
  const before = restarts.length;
  const pid = stack.pid(app)!;
  const started = Date.now();
  const back = (async () => {
    await new Promise((r) => setTimeout(r, 300));
    process.kill(pid, 'SIGKILL');
    await eventually(async () => restarts.length > before && stack.pid(app) !== pid, (v) => v, 15_000);
    await stack.healthy(app, 15_000);
    // And the API works again end to end.
    await eventually(async () => (await api('GET', '/users?limit=1')).status, (s) => s === 200, 15_000);
  })();
  const load = await writeWhile(back, `${app}-sv-`);
  await back;
  const recovery = Date.now() - started;
  expect(recovery).toBeLessThan(15_000);
  expect(restarts.slice(before)).toEqual([{ app, decision: expect.objectContaining({ recentCrashes: 1, crashLoop: false }) }]);
  // Only acknowledged writes and refusals that say "later": no 500 (a gateway that is down answers nothing: 0).
  expect(load.statuses.filter((s) => ![201, 503, 0].includes(s))).toEqual([]);
  expect(load.retryAfterMissing).toBe(0);
  // The outage was seen on the write path (the load ran through it); off it, no write noticed. Writes go on after.
  expect(load.statuses.some((s) => s !== 201)).toBe(onWritePath);
  expect((await api('POST', '/users', { email: `${app}-after@example.com`, name: 'After' })).status).toBe(201);
  expect(load.acknowledged.length).toBeGreaterThan(0);
  for (const id of load.acknowledged) expect((await api('GET', `/users/${id}`)).status).toBe(200);
  const logged = await loggedUsers(load.acknowledged);
  for (const id of load.acknowledged) expect(logged.filter((e) => e.target?.id === id)).toHaveLength(1);
});

it('PostgreSQL killed with SIGKILL is started again (crash recovery); the services reconnect; no 500; nothing acknowledged lost, each logged once', async () => {
  const before = restarts.length;
  const pid = stack.pid('postgres')!;
  const started = Date.now();
  const back = (async () => {
    await new Promise((r) => setTimeout(r, 300));
    process.kill(pid, 'SIGKILL');
    await eventually(async () => restarts.length > before && stack.pid('postgres') !== pid, (v) => v, 15_000);
    await stack.healthy('postgres', 15_000);
    await eventually(async () => (await api('POST', '/users', { email: `pg-probe-${Date.now()}@example.com`, name: 'Probe' })).status, (s) => s === 201, 15_000);
  })();
  const load = await writeWhile(back, 'pg-sv-');
  await back;
  expect(Date.now() - started).toBeLessThan(15_000);
  expect(restarts.slice(before).map((r) => r.app)).toContain('postgres');
  expect(load.statuses.filter((s) => ![201, 503].includes(s))).toEqual([]);
  expect(load.retryAfterMissing).toBe(0);
  expect(load.statuses.some((s) => s !== 201)).toBe(true);
  for (const id of load.acknowledged) expect((await api('GET', `/users/${id}`)).status).toBe(200);
  // Every acknowledged change reaches the audit log once (outbox written in the same transaction).
  const logged = await loggedUsers(load.acknowledged);
  for (const id of load.acknowledged) expect(logged.filter((e) => e.target?.id === id)).toHaveLength(1);
});
