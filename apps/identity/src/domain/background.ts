import type { Logger } from '@secsvc/shared';

/**
 * Work an RPC starts after it has answered (so its answer cannot tell what the work found, e.g. whether an
 * account exists): tracked, so shutdown can wait for it before the mail queue and the database close.
 */
export class BackgroundWork {
  private readonly running = new Set<Promise<void>>();
  private closed = false;

  constructor(private readonly logger: Logger) {}

  /** Starts `fn` on the next turn of the event loop; its failure is logged with `what`, never thrown. */
  run(what: string, fn: () => Promise<void>): void {
    if (this.closed) {
      this.logger.warn({ what }, 'background work refused: shutting down');
      return;
    }
    const task: Promise<void> = new Promise<void>((resolve) => setImmediate(resolve))
      .then(fn)
      .catch((err: unknown) => this.logger.error({ what, err: { message: (err as Error).message } }, 'background work failed'))
      .finally(() => this.running.delete(task));
    this.running.add(task);
  }

  /** How many tasks are running. */
  get size(): number {
    return this.running.size;
  }

  /** Refuses new work and waits for the running tasks, at most `timeoutMs`; resolves to how many were left. */
  async close(timeoutMs: number): Promise<number> {
    this.closed = true;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)));
    await Promise.race([Promise.allSettled([...this.running]), timedOut]);
    clearTimeout(timer);
    if (this.running.size) this.logger.warn({ left: this.running.size }, 'background work still running at shutdown');
    return this.running.size;
  }
}
