// How many detail fetches to keep in flight. The budget sets the pace; requests in flight only have
// to be enough for it: by Little's law, the rate times how long each takes. A fixed few caps the
// rate at their number over the round trip, however fast the key; a fixed large number would hold
// turns a process cannot use while its neighbours sharing the key wait on the budget.

/** Requests in flight when nothing says more are needed. */
export const DEFAULT_IN_FLIGHT = 8;
/** Requests in flight at most in one process, however fast the pace and slow the round trips. */
export const MAX_IN_FLIGHT = 32;
/** Room above what is on the wire: the turns waiting on the budget hold slots too. */
const HEADROOM = 1.5;
/**
 * This process's rate is read over the last second and may grow this much between two readings:
 * while the bound is what holds it back, its rate is the bound over the round trip, and the bound
 * must rise faster than one reading at a time.
 */
const RATE_WINDOW_MS = 1_000;
const GROWTH = 2;
/** One slow answer (a retry after a stall, a busy event loop) moves the round trip read at most this far. */
const WIRE_STEP = 4;

/**
 * Requests in flight a rate needs when each takes `wireMs` from sending to its answer, never fewer
 * than `base` nor more than MAX_IN_FLIGHT (unless `base` is more).
 */
export function inFlightFor(ratePerSecond: number | null, wireMs: number | null, base: number): number {
  if (ratePerSecond === null || wireMs === null || !(ratePerSecond > 0) || !(wireMs > 0)) return base;
  const needed = Math.ceil(((ratePerSecond * wireMs) / 1000) * HEADROOM);
  return Math.max(base, Math.min(MAX_IN_FLIGHT, needed));
}

/**
 * What one process has seen of its detail fetches: the pace the budget granted them at, how long
 * their answers took, and how many came back lately. The rate sized for is the budget's pace or
 * twice this process's own lately, whichever is less: several processes sharing a key through the
 * budget each take a share of its pace, and one alone grows to the whole of it in a few seconds.
 */
export class InFlightGauge {
  private pace: number | null = null;
  private wireMs: number | null = null;
  private readonly answers: number[] = [];
  private head = 0;

  constructor(private readonly now: () => number) {}

  /** A turn granted at `pace` requests a second (null: nothing limits us yet). */
  granted(pace: number | null): void {
    this.pace = pace;
  }

  /** An answer that took `ms` from sending. */
  answered(ms: number): void {
    this.answers.push(this.now());
    if (!(ms >= 0)) return;
    const old = this.wireMs ?? ms;
    const reading = Math.min(ms, old * WIRE_STEP);
    // A slower answer is followed quickly and a quicker one slowly: too few in flight costs the pace.
    this.wireMs = old + (reading - old) * (reading > old ? 0.25 : 0.05);
  }

  /** Requests in flight to keep, `base` at least. */
  needed(base: number): number {
    if (this.pace === null) return base;
    return inFlightFor(Math.min(this.pace, this.ownRate() * GROWTH), this.wireMs, base);
  }

  /** Answers a second over the last RATE_WINDOW_MS. */
  private ownRate(): number {
    const since = this.now() - RATE_WINDOW_MS;
    while (this.head < this.answers.length && (this.answers[this.head] as number) < since) this.head++;
    if (this.head > 1024) {
      this.answers.splice(0, this.head);
      this.head = 0;
    }
    return ((this.answers.length - this.head) * 1000) / RATE_WINDOW_MS;
  }
}
