/**
 * Chaos under load, both profiles: while a steady mixed load of writes runs (users, sessions, policies,
 * exports), every process is killed with SIGKILL in turn (each app or replica, then the dependencies:
 * PostgreSQL, and in the distributed profile the Kafka broker and Redis), then a random one every 10 s. The
 * launchers restart what died by themselves. Afterwards: every acknowledged write is there, every acknowledged
 * change is in the audit log exactly once, every export completed, no answer was a 500 (or any other error), and
 * each recovery took under 15 s.
 *
 * `npm run chaos -- --minutes 10 [--profile local|distributed]` is the same run with a longer random phase; it
 * writes its result to .cache/chaos/ (see docs/operations.md, "Chaos").
 */
import { startDistributedStack, type DistributedStack } from '@secsvc/dev/stack';
import { kafkaUnavailable, redisSkipReason, s3SkipReason } from '@secsvc/dev/testing';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { checkNothingLost, killAndRecover, MixedLoad, writeReport, type Findings, type Kill, type Victim } from './chaos';
import { apiClient, startTestStack, type Api } from './support';

const RANDOM_MINUTES = Number(process.env.CHAOS_MINUTES ?? '0.5');
const PROFILES = (process.env.CHAOS_PROFILE ?? 'local,distributed').split(',');
const RECOVERY_LIMIT_MS = 15_000;
jest.setTimeout(600_000 + RANDOM_MINUTES * 60_000 * 2);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The stack's output lines at warn level and above (JSON logs), to explain a bad answer by its request id. */
const problems: string[] = [];
const keepProblems = (name: string, line: string) => {
  if (/"level":"(warn|error|fatal)"/.test(line)) problems.push(`${name}: ${line}`);
};

/** Every restart the launcher made, by name, in order. */
const restarts: string[] = [];

interface Run {
  baseUrl: string;
  /** Where the stack's mail goes (MAIL_DIR: the data directory's mail/). */
  mailDir: string;
  /** The admin key the stack started with. */
  api: Api;
  victims: Victim[];
  stop: () => Promise<void>;
}

async function localRun(): Promise<Run> {
  const key = 'svc_sk_' + 'chaosLocalTests0'.repeat(3);
  const { stack, api, stop, dataDir } = await startTestStack('chaos', key, {}, { onOutput: keepProblems, onRestart: (app) => void restarts.push(app) });
  const names = ['identity', 'gateway', 'policy', 'audit', 'export-worker', 'postgres'] as const;
  return {
    baseUrl: stack.baseUrl,
    mailDir: path.join(dataDir, 'mail'),
    api,
    victims: names.map((name) => ({ name, pid: () => stack.pid(name), healthy: (ms) => stack.healthy(name, ms) })),
    stop,
  };
}

async function distributedRun(): Promise<Run> {
  const tmp = await mkdtemp(path.join(os.tmpdir(), 'secsvc-e2e-chaos-'));
  await chmod(tmp, 0o711);
  let stack: DistributedStack;
  try {
    stack = await startDistributedStack({
      rootDir: path.resolve(__dirname, '../../..'),
      dataDir: path.join(tmp, 'data'),
      host: '127.0.0.1',
      port: 0,
      // A killed worker's export is taken over after 3 s.
      env: { LOG_LEVEL: 'warn', EXPORT_LEASE_SECONDS: '3', EXPORT_POLL_MS: '200' },
      onOutput: keepProblems,
      onRestart: (name) => void restarts.push(name),
    });
  } catch (err) {
    await rm(tmp, { recursive: true, force: true });
    throw err;
  }
  const names = ['identity-1', 'policy-2', 'audit-1', 'export-worker-1', 'gateway-1', 'identity-2', 'kafka', 'redis', 's3', 'postgres'];
  return {
    baseUrl: stack.baseUrl,
    mailDir: path.join(tmp, 'data', 'mail'),
    api: apiClient(stack.baseUrl, stack.bootstrapKey!),
    victims: names.map((name) => ({ name, pid: () => stack.pid(name), healthy: (ms) => stack.healthy(name, ms) })),
    stop: async () => {
      await stack.stop();
      await rm(tmp, { recursive: true, force: true });
    },
  };
}

// The distributed profile needs Kafka, redis-server and versitygw: under CI=true it runs and fails with the
// reason (CI must not pass on a missing dependency); elsewhere it is skipped and says why on stderr.
const distributedMissing = [kafkaUnavailable(), redisSkipReason(), s3SkipReason()].filter(Boolean).join('; ');
const skipDistributed = distributedMissing !== '' && process.env.CI !== 'true';
if (skipDistributed && PROFILES.includes('distributed')) process.stderr.write(`SKIPPED "chaos: distributed profile": ${distributedMissing}\n`);

describe.each(PROFILES.map((p) => [p]))('chaos under load: %s profile', (profile) => {
  const start = profile === 'distributed' ? distributedRun : localRun;
  const maybe = profile === 'distributed' && skipDistributed ? it.skip : it; // skip reason: a dependency is not installed (see above)
  let run: Run | undefined;
  let load: MixedLoad;
  let sessionUser: { id: string; email: string };
  const kills: Kill[] = [];
  let findings: Findings | undefined;

  beforeAll(async () => {
    if (profile === 'distributed' && skipDistributed) return;
    run = await start();
    // A key whose rate limit the retries of an outage cannot reach.
    const key = (await run.api('POST', '/api-keys', { name: 'chaos load', type: 'secret', plan: 'enterprise', rateLimit: 1_000_000 })).body.data.key;
    run.api = apiClient(run.baseUrl, key);
    sessionUser = (await run.api('POST', '/users', { email: `chaos-sessions-${profile}@example.com`, name: 'Sessions' })).body.data;
    load = new MixedLoad(run.api, sessionUser);
    load.start();
  }, 300_000);

  afterAll(async () => {
    await load?.stop();
    await run?.stop();
    if (process.env.CHAOS_REPORT && run) {
      const recoveries = kills.map((k) => k.recoveryMs).sort((a, b) => a - b);
      await writeReport(path.join(process.env.CHAOS_REPORT, `${profile}.json`), {
        profile,
        randomMinutes: RANDOM_MINUTES,
        kills,
        recoveryMs: { median: recoveries[Math.floor(recoveries.length / 2)], max: recoveries.at(-1) },
        findings,
      });
    }
  }, 300_000);

  maybe('each process killed in turn comes back by itself within 15 s, the load running throughout', async () => {
    for (const victim of run!.victims) {
      await sleep(1500);
      const kill = await killAndRecover(run!.api, victim, load, restarts);
      kills.push(kill);
      expect({ victim: kill.victim, recoveredInTime: kill.recoveryMs < RECOVERY_LIMIT_MS, collateral: kill.collateral }).toEqual({ victim: victim.name, recoveredInTime: true, collateral: [] });
    }
    // The load ran through every kill: something of each kind was acknowledged.
    for (const kind of ['user', 'session', 'policy', 'export', 'reset'] as const) expect(load.acknowledged[kind].length).toBeGreaterThan(0);
  });

  maybe(`a random process every 10 s for ${RANDOM_MINUTES} min: each comes back within 15 s`, async () => {
    const end = Date.now() + RANDOM_MINUTES * 60_000;
    while (Date.now() < end) {
      const started = Date.now();
      const victim = run!.victims[Math.floor(Math.random() * run!.victims.length)]!;
      const kill = await killAndRecover(run!.api, victim, load, restarts);
      kills.push(kill);
      expect({ victim: kill.victim, recoveredInTime: kill.recoveryMs < RECOVERY_LIMIT_MS, collateral: kill.collateral }).toEqual({ victim: victim.name, recoveredInTime: true, collateral: [] });
      await sleep(Math.max(0, 10_000 - (Date.now() - started)));
    }
  });

  maybe('nothing acknowledged was lost, each change logged once, every export completed, no error answer', async () => {
    await load.stop();
    findings = await checkNothingLost(run!.api, load, run!.mailDir);
    process.stdout.write(`chaos (${profile}): ${JSON.stringify({ kills: kills.length, acknowledged: findings.acknowledged, resets: findings.resets, policyDeletes: findings.policyDeletes, statuses: findings.statuses })}\n`);
    for (const bad of findings.badAnswers) {
      const id = /req_[0-9a-z]+/.exec(bad.body)?.[0];
      process.stdout.write(`bad answer ${bad.status} (${bad.kind}): ${bad.body}\n${problems.filter((l) => id && l.includes(id)).join('\n')}\n`);
    }
    expect(findings.badAnswers).toEqual([]);
    expect(findings.lost).toEqual([]);
    expect(findings.auditMissing).toEqual([]);
    expect(findings.auditDuplicated).toEqual([]);
    expect(findings.exportsNotCompleted).toEqual([]);
    // Every acknowledged reset request was mailed; every composed one (its event) exactly once as a token.
    expect(findings.resets.mailed).toBeGreaterThanOrEqual(findings.resets.acknowledged);
    expect(findings.resets.mailed).toBe(findings.resets.requestedEvents);
    expect(findings.resets.acknowledged).toBeGreaterThan(0);
    expect(findings.acknowledged.user).toBeGreaterThan(0);
  });
});
