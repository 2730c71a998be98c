// Listing ahead of fetching. A lister that waits for room in the load pipeline holds its next
// cursor all that time, and an API may stop accepting a cursor held too long: at a low rate limit
// one page's details alone can take longer than a cursor lives. So the lister runs ahead into a
// buffer of what pages ask for (the ids to fetch, the walk's position: small, unlike the details),
// taking each next page as soon as its budget turn comes. It waits, holding a cursor, only when
// `limit` of work is already listed and waiting.
//
// After a refused cursor the listing starts over, and should not land in a full buffer again: it
// first waits until the buffer is down to half (`roomToRestart`), holding no cursor meanwhile.

export class ListAhead<T> {
  private readonly buffer: T[] = [];
  private weight = 0;
  private stopped = false;
  private wakeLister: (() => void) | null = null;
  private wakeTaker: (() => void) | null = null;
  private drains: (() => void)[] = [];

  constructor(
    private readonly limit: number,
    private readonly weigh: (item: T) => number,
  ) {
    if (!(limit > 0)) throw new RangeError('the list-ahead limit must be positive');
  }

  /** How much is listed and waiting to be taken. */
  get waiting(): number {
    return this.weight;
  }

  /**
   * Lists `source` into the buffer while `take` is given its items in order. Items listed before a
   * listing failure are all taken before the failure is thrown; a failure of `take` stops the
   * listing (at its next item) and is thrown once it has stopped.
   */
  async run(source: AsyncIterable<T>, take: (item: T) => Promise<void>): Promise<void> {
    let ended = false;
    let failure: unknown = null;
    const lister = (async () => {
      try {
        for await (const item of source) {
          this.buffer.push(item);
          this.weight += this.weigh(item);
          this.wake();
          while (this.weight >= this.limit && !this.stopped) await new Promise<void>((r) => (this.wakeLister = r));
          if (this.stopped) break;
        }
      } catch (e) {
        failure = e ?? new Error('the listing failed');
      } finally {
        ended = true;
        this.wake();
      }
    })();
    try {
      for (;;) {
        const item = this.buffer.shift();
        if (item !== undefined) {
          this.weight -= this.weigh(item);
          this.wake();
          await take(item);
          continue;
        }
        if (ended) break;
        await new Promise<void>((r) => (this.wakeTaker = r));
      }
    } catch (e) {
      this.stopped = true;
      this.wake();
      await lister;
      throw e;
    }
    await lister;
    if (failure !== null) throw failure;
  }

  /** Resolves once what is waiting weighs at most half the limit (at once when stopped). */
  roomToRestart(): Promise<void> {
    if (this.stopped || this.weight <= this.limit / 2) return Promise.resolve();
    return new Promise<void>((r) => this.drains.push(r));
  }

  private wake(): void {
    const lister = this.wakeLister;
    const taker = this.wakeTaker;
    this.wakeLister = null;
    this.wakeTaker = null;
    lister?.();
    taker?.();
    if (this.stopped || this.weight <= this.limit / 2) {
      const drains = this.drains;
      this.drains = [];
      for (const d of drains) d();
    }
  }
}
