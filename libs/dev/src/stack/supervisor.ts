import { backoffDelay } from '@secsvc/shared';
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
    const { baseDelayMs: baseMs, maxDelayMs: maxMs, random } = this.policy;
    // A crash loop waits the longest delay (with its jitter): as if many crashes had come before.
    const delayMs = backoffDelay(crashLoop ? Number.MAX_SAFE_INTEGER : recentCrashes, { baseMs, maxMs, random });
    return { delayMs, recentCrashes, crashLoop };
  }
}

export type ExitStatus = { code: number | null; signal: NodeJS.Signals | null };

/**
 * Restarts the children of a launcher that die on their own: each after its CrashHistory's backoff, reported
 * through `onRestart` first. A restart that fails (a start that throws) counts as one more crash of that child.
 * `stop()` cancels what is pending and refuses new restarts, so Ctrl-C leaves nothing to start behind it.
 */
export class Supervisor<Name extends string> {
  private readonly crashes = new Map<Name, CrashHistory>();
  private readonly pending = new Set<NodeJS.Timeout>();
  private stopped = false;

  constructor(
    private readonly policy: RestartPolicy = RESTART_POLICY,
    private readonly onRestart?: (name: Name, exit: ExitStatus, decision: RestartDecision) => void,
    /** A restart that failed (the reason; another restart follows). */
    private readonly onRestartFailed?: (name: Name, err: Error) => void,
  ) {}

  get stopping(): boolean {
    return this.stopped;
  }

  /** `name` exited unasked: `restart` runs after its backoff (unless the launcher is stopping by then). */
  crashed(name: Name, exit: ExitStatus, restart: () => void | Promise<unknown>): void {
    if (this.stopped) return;
    let history = this.crashes.get(name);
    if (!history) this.crashes.set(name, (history = new CrashHistory(this.policy)));
    const decision = history.crashed();
    this.onRestart?.(name, exit, decision);
    const timer = setTimeout(() => {
      this.pending.delete(timer);
      if (this.stopped) return;
      Promise.resolve()
        .then(restart)
        .catch((err: unknown) => {
          this.onRestartFailed?.(name, err as Error);
          this.crashed(name, { code: null, signal: null }, restart);
        });
    }, decision.delayMs);
    this.pending.add(timer);
  }

  /** Cancels pending restarts; later crashes are ignored. */
  stop(): void {
    this.stopped = true;
    for (const timer of this.pending) clearTimeout(timer);
    this.pending.clear();
  }
}

/** The console line a launcher prints for a restart: loud (`!!!`) for a crash loop. */
export function describeRestart(name: string, exit: ExitStatus, decision: RestartDecision): string {
  const how = exit.signal ? `signal ${exit.signal}` : `code ${exit.code}`;
  return decision.crashLoop
    ? `!!! ${name} is crash-looping: ${decision.recentCrashes} crashes in the last minute (last: ${how}); restarting it every ${Math.round(decision.delayMs / 1000)} s. Its last output is above.`
    : `${name} exited (${how}); restarting it in ${decision.delayMs} ms`;
}
