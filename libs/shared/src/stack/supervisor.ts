/** How a launcher restarts a child that died on its own. */
export interface RestartPolicy {
  /** Wait before the first restart; doubled for each crash still inside the window, up to maxDelayMs. */
  baseDelayMs: number;
  maxDelayMs: number;
  /** This many crashes inside windowMs is a crash loop: reported loudly (restarts go on at maxDelayMs). */
  loopCrashes: number;
  windowMs: number;
  /** Random source of the jitter, in [0, 1): each delay is scaled by 0.8 to 1.2. */
  random: () => number;
}

export const RESTART_POLICY: RestartPolicy = { baseDelayMs: 250, maxDelayMs: 30_000, loopCrashes: 5, windowMs: 60_000, random: Math.random };

export interface RestartDecision {
  delayMs: number;
  /** Crashes of this child inside the window, this one included. */
  recentCrashes: number;
  crashLoop: boolean;
}

/** The crashes of one child and when to restart it after the next one: exponential backoff with jitter. */
export class CrashHistory {
  private readonly crashes: number[] = [];

  constructor(private readonly policy: RestartPolicy = RESTART_POLICY) {}

  crashed(now = Date.now()): RestartDecision {
    this.crashes.push(now);
    while (this.crashes.length && this.crashes[0]! <= now - this.policy.windowMs) this.crashes.shift();
    const recentCrashes = this.crashes.length;
    const crashLoop = recentCrashes >= this.policy.loopCrashes;
    const backoff = crashLoop ? this.policy.maxDelayMs : Math.min(this.policy.maxDelayMs, this.policy.baseDelayMs * 2 ** (recentCrashes - 1));
    return { delayMs: Math.round(backoff * (0.8 + 0.4 * this.policy.random())), recentCrashes, crashLoop };
  }
}
