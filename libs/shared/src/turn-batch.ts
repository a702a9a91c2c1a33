/**
 * Gathers the items added in one turn of the event loop and hands them to `run` together (in order, at most
 * `max` at a time), answering each caller with its own result: many small writes made at once (events under
 * load) become one. `run` returns one result per item, in order; when it fails, every item of that run fails.
 */
export class TurnBatch<I, O> {
  private pending: Array<{ item: I; resolve: (o: O) => void; reject: (err: unknown) => void }> = [];

  constructor(
    private readonly run: (items: I[]) => Promise<O[]>,
    private readonly max = 1000,
  ) {}

  add(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      if (this.pending.push({ item, resolve, reject }) === 1) setImmediate(() => this.flush());
    });
  }

  private flush(): void {
    const all = this.pending;
    this.pending = [];
    for (let i = 0; i < all.length; i += this.max) {
      const part = all.slice(i, i + this.max);
      let ran: Promise<O[]>;
      try {
        ran = this.run(part.map((p) => p.item));
      } catch (err) {
        ran = Promise.reject(err);
      }
      ran.then(
        (results) => {
          if (results.length !== part.length) throw new Error(`batch gave ${results.length} results for ${part.length} items`);
          part.forEach((p, k) => p.resolve(results[k]!));
        },
        (err: unknown) => part.forEach((p) => p.reject(err)),
      ).catch((err: unknown) => part.forEach((p) => p.reject(err)));
    }
  }
}
