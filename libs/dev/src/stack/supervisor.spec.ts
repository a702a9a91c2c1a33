import { CrashHistory, describeRestart, RESTART_POLICY, Supervisor } from './supervisor';

const policy = { ...RESTART_POLICY, baseDelayMs: 100, maxDelayMs: 1000, loopCrashes: 5, windowMs: 60_000, random: () => 0.5 };

describe('CrashHistory (the launcher restarting a child that died)', () => {
  it('doubles the wait for each crash inside the window, up to the maximum', () => {
    const h = new CrashHistory(policy);
    expect([0, 1, 2, 3].map((i) => h.crashed(i * 1000).delayMs)).toEqual([100, 200, 400, 800]);
  });

  it('calls five crashes in a minute a crash loop, restarting at the maximum wait', () => {
    const h = new CrashHistory(policy);
    const decisions = [0, 1, 2, 3, 4, 5].map((i) => h.crashed(i * 1000));
    expect(decisions.map((d) => d.crashLoop)).toEqual([false, false, false, false, true, true]);
    expect(decisions.at(-1)).toEqual({ delayMs: 1000, recentCrashes: 6, crashLoop: true });
  });

  it('forgets crashes older than the window', () => {
    const h = new CrashHistory(policy);
    for (const t of [0, 1000, 2000, 3000]) h.crashed(t);
    expect(h.crashed(65_000)).toEqual({ delayMs: 100, recentCrashes: 1, crashLoop: false });
  });

  it('spreads restarts by ±20 % (jitter)', () => {
    expect(new CrashHistory({ ...policy, random: () => 0 }).crashed(0).delayMs).toBe(80);
    expect(new CrashHistory({ ...policy, random: () => 0.999999 }).crashed(0).delayMs).toBe(120);
  });
});

describe('Supervisor', () => {
  const fast = { ...policy, baseDelayMs: 5, maxDelayMs: 20, random: () => 0.5 };
  const exit = { code: null, signal: 'SIGKILL' as const };

  it('restarts a crashed child after its backoff and reports the decision first', async () => {
    const reported: string[] = [];
    const s = new Supervisor<string>(fast, (name, e, d) => reported.push(`${name} ${e.signal} ${d.recentCrashes}`));
    const restarted = new Promise<void>((resolve) => s.crashed('identity', exit, resolve));
    expect(reported).toEqual(['identity SIGKILL 1']);
    await restarted;
  });

  it('a restart that fails counts as another crash and is tried again', async () => {
    const failures: string[] = [];
    const decisions: number[] = [];
    const s = new Supervisor<string>(fast, (_n, _e, d) => decisions.push(d.recentCrashes), (name, err) => failures.push(`${name}: ${err.message}`));
    let attempts = 0;
    await new Promise<void>((resolve) =>
      s.crashed('postgres', exit, async () => {
        if (++attempts < 3) throw new Error(`port busy ${attempts}`);
        resolve();
      }),
    );
    expect(failures).toEqual(['postgres: port busy 1', 'postgres: port busy 2']);
    expect(decisions).toEqual([1, 2, 3]);
  });

  it('stop() cancels pending restarts and ignores later crashes', async () => {
    const s = new Supervisor<string>({ ...fast, baseDelayMs: 30 });
    let ran = 0;
    s.crashed('gateway', exit, () => void ran++);
    s.stop();
    s.crashed('policy', exit, () => void ran++);
    await new Promise((r) => setTimeout(r, 80));
    expect(ran).toBe(0);
    expect(s.stopping).toBe(true);
  });

  it('says a crash loop loudly', () => {
    expect(describeRestart('audit', { code: 1, signal: null }, { delayMs: 30_000, recentCrashes: 5, crashLoop: true })).toMatch(/^!!! audit is crash-looping: 5 crashes .*code 1.*every 30 s/);
    expect(describeRestart('audit', exit, { delayMs: 250, recentCrashes: 1, crashLoop: false })).toBe('audit exited (signal SIGKILL); restarting it in 250 ms');
  });
});
