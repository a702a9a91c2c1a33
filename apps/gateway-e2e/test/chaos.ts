/**
 * The chaos harness: a steady mixed load of writes (users, sessions, policies, exports) through the public API,
 * `kill -9` of processes while it runs, and the checks that nothing acknowledged was lost. Used by
 * chaos.test.ts (bounded, in CI) and by `npm run chaos` (minutes of random kills, the result recorded).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { writeFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { eventually, type Api } from './support';

/** A process the harness may kill: an app, a replica, or a dependency (PostgreSQL, the broker, Redis). */
export interface Victim {
  name: string;
  pid: () => number | undefined;
  /** Resolves once the process (started again by its launcher) answers its health check. */
  healthy: (timeoutMs: number) => Promise<void>;
}

export interface Kill {
  victim: string;
  /** From SIGKILL until the launcher's new process answered its health check and the API answered reads again. */
  recoveryMs: number;
  /** When it happened, in ms since the load started. */
  atMs: number;
  /** Other processes that died (and were restarted) meanwhile: a dependency's crash must not take others along. */
  collateral: string[];
}

type Kind = 'user' | 'session' | 'policy' | 'export' | 'reset';

/** An answer that is not an acknowledgement and not a refusal that says "later". */
interface BadAnswer {
  kind: Kind;
  status: number;
  body: string;
}

/**
 * Writes of four kinds in parallel loops, one request at a time each, until stop(). What it counts as fine:
 * the success status (acknowledged: recorded for the checks), 503 with Retry-After, and no answer at all (0: a
 * gateway killed mid-request, or refusing connections while it restarts). Anything else is a bad answer.
 */
export class MixedLoad {
  readonly acknowledged: Record<Kind, string[]> = { user: [], session: [], policy: [], export: [], reset: [] };
  /** Session tokens, by session id (each must still verify). */
  readonly tokens = new Map<string, string>();
  readonly statuses = new Map<number, number>();
  readonly bad: BadAnswer[] = [];
  private running = false;
  private loops: Promise<void>[] = [];
  private readonly startedAt = Date.now();
  private readonly tag = Date.now().toString(36);

  constructor(
    private readonly api: Api,
    /** The user whose sessions the session loop opens. */
    private readonly sessionUser: { id: string; email: string },
    private readonly exportEveryMs = 3000,
    /** Pause between two writes of a loop: a steady load, not the machine's ceiling. */
    private readonly pauseMs = 10,
  ) {}

  /** Emails of the users the load created, in order. */
  readonly userEmails: string[] = [];
  /** Every email a reset was asked for (acknowledged or not). */
  readonly resetEmails = new Set<string>();

  private resetEmail(i: number): string {
    const email = this.userEmails[i] ?? this.sessionUser.email;
    this.resetEmails.add(email);
    return email;
  }

  get elapsedMs(): number {
    return Date.now() - this.startedAt;
  }

  start(): void {
    this.running = true;
    const from = new Date(this.startedAt - 60_000).toISOString();
    this.loops = [
      this.loop('user', 201, (i) => ['/users', { email: `chaos-${this.tag}-${i}@example.com`, name: `Chaos ${i}` }], (data) => {
        this.userEmails.push(data.email);
        return data.id;
      }),
      this.loop('session', 201, () => ['/sessions', { userId: this.sessionUser.id, expiresIn: '1h' }], (data) => {
        this.tokens.set(data.id, data.token);
        return data.id;
      }),
      this.loop(
        'policy',
        201,
        (i) => ['/policies', { name: `chaos ${this.tag} ${i}`, effect: 'allow', principals: ['role:chaos'], actions: ['read'], resources: [`/chaos/${this.tag}/${i}`] }],
        (data) => data.id,
        this.pauseMs,
        () => this.deleteOldPolicy(),
      ),
      // Password reset mail: acknowledged once queued durably (identity.mail_jobs); the mail must follow. Each
      // request names another user the load created (one account is mailed at most 5 tokens an hour).
      this.loop('reset', 202, (i) => ['/auth/password-reset', { email: this.resetEmail(i) }], (_data) => `reset-${Date.now()}`, 500),
      this.loop('export', 202, (i) => ['/logs/export', { format: i % 2 ? 'json' : 'csv', from, to: new Date(Date.now() + 3_600_000).toISOString() }], (data) => data.exportId, this.exportEveryMs),
    ];
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
  }

  /** Requests answered, by status (0: no answer). */
  get counts(): Record<string, number> {
    return Object.fromEntries([...this.statuses.entries()].sort(([a], [b]) => a - b).map(([s, n]) => [String(s), n]));
  }

  private async loop(
    kind: Kind,
    success: number,
    request: (i: number) => [string, unknown],
    idOf: (data: Record<string, string>) => string,
    pauseMs = this.pauseMs,
    /** More work of the loop after each request (the policy loop's deletes). */
    then?: () => Promise<void>,
  ): Promise<void> {
    for (let i = 0; this.running; i++) {
      const [path, body] = request(i);
      const res = await this.send(kind, 'POST', path, body, [success]);
      if (res.status === success) this.acknowledged[kind].push(idOf(res.body.data));
      await then?.();
      const wait = res.status === success ? pauseMs : 100;
      if (wait) await new Promise((r) => setTimeout(r, wait));
    }
  }

  /** One request, counted; an answer that is neither `fine` nor a "later" is a bad answer. */
  private async send(kind: Kind, method: string, path: string, body: unknown, fine: number[]) {
    const res = await this.api(method, path, body).catch(() => ({ status: 0, headers: new Headers(), body: undefined }));
    this.statuses.set(res.status, (this.statuses.get(res.status) ?? 0) + 1);
    if (!(fine.includes(res.status) || res.status === 0 || (res.status === 503 && res.headers.get('retry-after')) || diedMidRequest(res))) {
      this.bad.push({ kind, status: res.status, body: JSON.stringify(res.body ?? null).slice(0, 300) });
    }
    return res;
  }

  /** Policies deleted with an acknowledgement (204): gone afterwards, each with its policy.deleted entry once. */
  readonly deletedPolicies: string[] = [];
  /** Policies whose delete was answered 404 after an attempt without answer: that attempt deleted it. */
  readonly goneUnacknowledged: string[] = [];
  private oldest = 0;
  private deleteTried = false;

  /**
   * Keeps the environment well under the policy limit (10,000): past 500 live policies, the oldest is deleted.
   * A delete without an answer is tried again; its 404 then means the first attempt had deleted it.
   */
  private async deleteOldPolicy(): Promise<void> {
    if (this.acknowledged.policy.length - this.oldest <= 500) return;
    const id = this.acknowledged.policy[this.oldest]!;
    const res = await this.send('policy', 'DELETE', `/policies/${id}`, undefined, this.deleteTried ? [204, 404] : [204]);
    if (res.status === 204 || res.status === 404) {
      (res.status === 204 ? this.deletedPolicies : this.goneUnacknowledged).push(id);
      this.oldest++;
      this.deleteTried = false;
    } else this.deleteTried = true;
  }
}

/**
 * The load balancer's 502 for a request whose gateway died while it was in flight (its outcome is unknown,
 * as for a connection a gateway dropped: not an acknowledgement, and a retry is the client's to make).
 */
function diedMidRequest(res: { status: number; body?: { error?: { message?: string } } }): boolean {
  return res.status === 502 && res.body?.error?.message === 'No gateway answered';
}

/** Reads that go through identity, policy and audit: all 200 means the API is back end to end. */
export async function apiAnswers(api: Api): Promise<boolean> {
  const paths = ['/users?limit=1', '/policies?limit=1', '/logs?limit=1'];
  const answers = await Promise.all(paths.map((p) => api('GET', p).catch(() => ({ status: 0 }))));
  return answers.every((a) => a.status === 200);
}

/**
 * SIGKILL of `victim`, then the time until its launcher has it answering again and the API reads work.
 * `restarts` is the launcher's list of restarted names (appended as they happen).
 */
export async function killAndRecover(api: Api, victim: Victim, load: MixedLoad, restarts: string[]): Promise<Kill> {
  const before = restarts.length;
  const pid = victim.pid();
  if (!pid) throw new Error(`${victim.name} has no process to kill`);
  const atMs = load.elapsedMs;
  const killedAt = Date.now();
  process.kill(pid, 'SIGKILL');
  await eventually(async () => victim.pid() !== undefined && victim.pid() !== pid, (v) => v, 60_000);
  await victim.healthy(60_000);
  await eventually(() => apiAnswers(api), (ok) => ok, 60_000);
  const collateral = restarts.slice(before).filter((name) => name !== victim.name);
  return { victim: victim.name, recoveryMs: Date.now() - killedAt, atMs, collateral };
}

interface LoggedEntry {
  event: string;
  result: string;
  actor?: { email?: string };
  target?: { id: string };
}

/** Every log entry of `events`, all pages. */
async function loggedEntries(api: Api, events: string[]): Promise<LoggedEntry[]> {
  const entries: LoggedEntry[] = [];
  let cursor = '';
  for (;;) {
    const res = await api('GET', `/logs?events=${events.join(',')}&limit=100${cursor ? `&cursor=${cursor}` : ''}`);
    if (res.status !== 200) throw new Error(`GET /logs answered ${res.status}`);
    entries.push(...(res.body.data as LoggedEntry[]));
    if (!res.body.pagination.hasMore) return entries;
    cursor = res.body.pagination.nextCursor;
  }
}

/** The log entries of `events`, counted by event and target id (`policy.created:pol_…`). */
async function loggedTargets(api: Api, events: string[]): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const e of await loggedEntries(api, events)) {
    if (e.target) counts.set(`${e.event}:${e.target.id}`, (counts.get(`${e.event}:${e.target.id}`) ?? 0) + 1);
  }
  return counts;
}

/** The distinct reset tokens mailed to `emails` (MAIL_DIR: one JSON file per message, a message may come twice). */
function mailedTokens(mailDir: string, emails: Set<string>): Set<string> {
  const tokens = new Set<string>();
  if (!existsSync(mailDir)) return tokens;
  for (const name of readdirSync(mailDir)) {
    if (!name.endsWith('.json')) continue;
    const mail = JSON.parse(readFileSync(path.join(mailDir, name), 'utf8')) as { to: string; data: { token?: string } };
    if (emails.has(mail.to) && mail.data.token) tokens.add(mail.data.token);
  }
  return tokens;
}

export interface Findings {
  acknowledged: Record<Kind, number>;
  /** Acknowledged writes that cannot be read back. */
  lost: string[];
  /** Acknowledged changes whose audit entry is missing (after waiting) or there more than once. */
  auditMissing: string[];
  auditDuplicated: string[];
  /** Policies deleted with an acknowledgement, and deletes whose first attempt went unanswered. */
  policyDeletes: { acknowledged: number; unanswered: number };
  /** Reset requests acknowledged, composed (their requested events) and mailed (distinct tokens). */
  resets: { acknowledged: number; requestedEvents: number; mailed: number };
  /** Exports that did not complete (id: status). */
  exportsNotCompleted: string[];
  badAnswers: BadAnswer[];
  statuses: Record<string, number>;
}

/**
 * After the load stopped: every acknowledged write reads back (users, policies; sessions still verify), every
 * acknowledged change has its audit entry exactly once, every acknowledged export completes.
 */
export async function checkNothingLost(api: Api, load: MixedLoad, mailDir: string, waitMs = 90_000): Promise<Findings> {
  const lost: string[] = [];
  for (const id of load.acknowledged.user) if ((await api('GET', `/users/${id}`)).status !== 200) lost.push(id);
  const gone = new Set([...load.deletedPolicies, ...load.goneUnacknowledged]);
  for (const id of load.acknowledged.policy) if ((await api('GET', `/policies/${id}`)).status !== (gone.has(id) ? 404 : 200)) lost.push(id);
  for (const id of load.acknowledged.session) {
    const res = await api('POST', '/sessions/verify', { token: load.tokens.get(id) });
    if (res.body?.data?.valid !== true) lost.push(id);
  }
  // user.created for users, policy.created for policies, user.login (target: the session) for sessions.
  const changes = [
    ...load.acknowledged.user.map((id) => `user.created:${id}`),
    ...load.acknowledged.policy.map((id) => `policy.created:${id}`),
    ...load.deletedPolicies.map((id) => `policy.deleted:${id}`),
    ...load.acknowledged.session.map((id) => `user.login:${id}`),
  ];
  const events = ['user.created', 'policy.created', 'policy.deleted', 'user.login'];
  let logged = new Map<string, number>();
  const deadline = Date.now() + waitMs;
  do {
    logged = await loggedTargets(api, events);
    if (changes.every((id) => logged.has(id))) break;
    await new Promise((r) => setTimeout(r, 1000));
  } while (Date.now() < deadline);
  // Every composed reset (one requested event each, whoever asked) is mailed, at least once; and there is one for
  // every acknowledged request (a request cut off after it was queued may add one more).
  // Composed resets: a token each (a throttled or unknown-email request is a failure and mails nothing).
  const requestedEvents = async () =>
    (await loggedEntries(api, ['user.password_reset.requested'])).filter((e) => e.result === 'success' && load.resetEmails.has(e.actor?.email ?? '')).length;
  let resets = { acknowledged: load.acknowledged.reset.length, requestedEvents: 0, mailed: 0 };
  do {
    resets = { ...resets, requestedEvents: await requestedEvents(), mailed: mailedTokens(mailDir, load.resetEmails).size };
    if (resets.mailed >= resets.acknowledged && resets.mailed === resets.requestedEvents) break;
    await new Promise((r) => setTimeout(r, 1000));
  } while (Date.now() < deadline);
  const exportsNotCompleted: string[] = [];
  for (const id of load.acknowledged.export) {
    const job = await eventually(
      async () => (await api('GET', `/logs/export/${id}`)).body?.data as { status?: string; error?: unknown } | undefined,
      (d) => d?.status !== 'processing' && d?.status !== undefined,
      Math.max(10_000, deadline - Date.now()),
    ).catch(() => ({ status: 'processing', error: undefined }));
    if (job?.status !== 'completed') exportsNotCompleted.push(`${id}: ${job?.status} ${JSON.stringify(job?.error ?? null)}`);
  }
  return {
    acknowledged: Object.fromEntries(Object.entries(load.acknowledged).map(([kind, ids]) => [kind, ids.length])) as Record<Kind, number>,
    policyDeletes: { acknowledged: load.deletedPolicies.length, unanswered: load.goneUnacknowledged.length },
    lost,
    auditMissing: changes.filter((id) => !logged.has(id)),
    auditDuplicated: changes.filter((id) => (logged.get(id) ?? 0) > 1),
    resets,
    exportsNotCompleted,
    badAnswers: load.bad,
    statuses: load.counts,
  };
}

/** Writes a run's result as JSON (the recorded result of `npm run chaos`). */
export async function writeReport(file: string, report: unknown): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, JSON.stringify(report, null, 2) + '\n');
}
