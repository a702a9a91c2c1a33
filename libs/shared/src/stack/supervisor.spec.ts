import { CrashHistory, RESTART_POLICY } from './supervisor';

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
