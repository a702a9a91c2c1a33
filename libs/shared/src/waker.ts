/**
 * A sleep that can be cut short: background loops sleep between polls and are woken by a notification or by
 * stop(). A wake-up that arrives while nobody sleeps (mid-work) is remembered, so the next sleep returns at
 * once and no notification is missed.
 */
export class Waker {
  private wakeUp: (() => void) | undefined;
  private woken = false;

  wake(): void {
    if (this.wakeUp) this.wakeUp();
    else this.woken = true;
  }

  sleep(ms: number): Promise<void> {
    if (this.woken) {
      this.woken = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wakeUp = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wakeUp = done;
    });
  }
}
