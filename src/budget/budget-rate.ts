import type { Logger } from '../util/logger.ts';
import { silentLogger } from '../util/logger.ts';
import { systemClock } from './budget-clock.ts';
import { readRateHeaders } from './budget-headers.ts';
import { MemoryBudgetStore } from './budget-memory-store.ts';
import { learn, pacedRate, pauseUntil, takeEndpointSlot, takeSlot } from './budget-policy.ts';
import type { BudgetClock, BudgetPolicy, BudgetSnapshot, BudgetStore, HeaderMap, RateBudget } from './budget-types.ts';

export interface RateBudgetOptions {
  /** Where the state lives; default: this process's memory. */
  store?: BudgetStore;
  /** RUNSYNC_RATE_LIMIT: requests per second at most; null or absent: learn from the API alone. */
  ceilingPerSecond?: number | null;
  /** Share of the key's budget left for its other users; default 5%. */
  reserve?: number;
  clock?: BudgetClock;
  logger?: Logger;
}

export const DEFAULT_RESERVE = 0.05;
const MAX_RECOUNTS = 4;

/** The budget of one API key, shared by every request made through it. */
export class SharedRateBudget implements RateBudget {
  readonly policy: Readonly<BudgetPolicy>;
  private readonly store: BudgetStore;
  private readonly clock: BudgetClock;
  private readonly logger: Logger;
  private readonly granted: Record<string, number> = {};
  private pauses = 0;

  constructor(options: RateBudgetOptions = {}) {
    const ceiling = options.ceilingPerSecond ?? null;
    const reserve = options.reserve ?? DEFAULT_RESERVE;
    if (ceiling !== null && !(Number.isFinite(ceiling) && ceiling > 0)) {
      throw new RangeError(`the rate ceiling must be a positive number of requests per second; got ${ceiling}`);
    }
    if (!(Number.isFinite(reserve) && reserve >= 0 && reserve < 1)) {
      throw new RangeError(`the reserve must be a share from 0 to below 1; got ${reserve}`);
    }
    this.policy = Object.freeze({ ceilingPerSecond: ceiling, reserve });
    this.store = options.store ?? new MemoryBudgetStore();
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger ?? silentLogger();
  }

  async acquire(endpoint: string, signal?: AbortSignal): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      if (signal?.aborted) throw signal.reason;
      // An endpoint with a bucket of its own waits its turn there first, without holding a slot of
      // the key's budget that other endpoints could use meanwhile.
      // The time is read when the step runs, not when it is queued: with a shared store the
      // update may wait behind others, and a slot cut from a stale "now" would lie in the past,
      // letting several callers start at once.
      const own = await this.store.update((s) => takeEndpointSlot(s, endpoint, this.clock.now(), this.policy));
      const asked = this.clock.now();
      if (own !== null && own.at > asked) await this.clock.sleep(own.at - asked, signal);
      const slot = await this.store.update((s) => takeSlot(s, this.clock.now(), this.policy));
      const now = this.clock.now();
      if (slot.at > now) {
        await this.clock.sleep(slot.at - now, signal);
        const state = await this.store.read();
        const woke = this.clock.now();
        // A 429 seen by another caller while we waited holds us too.
        if (state.pausedUntilMs > woke) continue;
        // The endpoint's own bucket was learned, or a pause came, after we took our turn in it:
        // take a turn again, or every caller held here would start in one bunch.
        if (state.endpoints[endpoint] !== undefined && (own === null || state.pausedUntilMs > own.pausedUntilMs))
          continue;
        // Woken so late (a stalled event loop) that the start would land in a window it was not
        // counted in: count it again rather than crowd that window. Bounded, so a slow process
        // still makes progress.
        if (slot.countedUntil !== null && woke >= slot.countedUntil && attempt < MAX_RECOUNTS) continue;
      }
      this.granted[endpoint] = (this.granted[endpoint] ?? 0) + 1;
      return;
    }
  }

  async observe(endpoint: string, status: number, headers: HeaderMap): Promise<void> {
    const obs = readRateHeaders(headers, this.clock.now());
    if (!obs) return;
    const change = await this.store.update((s) => {
      const state = learn(s, obs, status === 429, endpoint);
      const own = state.endpoints[endpoint];
      const ownChanged = own !== undefined && own.limit !== s.endpoints[endpoint]?.limit;
      return {
        state,
        result:
          state.limit !== s.limit
            ? { rate: pacedRate(state, this.policy), own: false }
            : ownChanged
              ? { rate: null, own: true }
              : undefined,
      };
    });
    if (change?.own) this.logger.debug({ endpoint, limit: obs.limit }, "learned a rate limit of the endpoint's own");
    else if (change) this.logger.debug({ endpoint, limit: obs.limit, rate: change.rate }, 'learned the rate limit');
  }

  async pause(retryAfterMs: number): Promise<void> {
    const until = this.clock.now() + Math.max(0, retryAfterMs);
    this.pauses++;
    await this.store.update((s) => ({ state: pauseUntil(s, until), result: undefined }));
  }

  async snapshot(): Promise<BudgetSnapshot> {
    const s = await this.store.read();
    return { ...s, ratePerSecond: pacedRate(s, this.policy), granted: { ...this.granted }, pauses: this.pauses };
  }
}
