import type { Logger } from '../util/logger.ts';
import { silentLogger } from '../util/logger.ts';
import { DEFAULT_RESERVE, keyPace } from './belief.ts';
import { systemClock } from './clock.ts';
import { readRateHeaders } from './headers.ts';
import { MemoryBudgetStore } from './memory-store.ts';
import { givenUp, learn, pauseUntil, stale, takeTurn } from './turns.ts';
import type { BudgetClock, BudgetPolicy, BudgetSnapshot, BudgetStore, Grant, HeaderMap, RateBudget } from './types.ts';
import { bucketViews, keyBurst } from './views.ts';

export { DEFAULT_RESERVE };

export interface RateBudgetOptions {
  /** Where the state lives; default: this process's memory. */
  store?: BudgetStore;
  /** RUNSYNC_RATE_LIMIT: requests per second at most; null or absent: the figures alone. */
  ceilingPerSecond?: number | null;
  /** RUNSYNC_RATE_RESERVE: the share left to the key's other users; default 5%. */
  reserve?: number;
  clock?: BudgetClock;
  logger?: Logger;
}

/** The budget of one API key, shared by every request made through it. */
export class SharedRateBudget implements RateBudget {
  readonly policy: Readonly<BudgetPolicy>;
  private readonly store: BudgetStore;
  private readonly clock: BudgetClock;
  private readonly logger: Logger;
  private readonly granted: Record<string, number> = {};
  private pauses = 0;
  private probes = 0;

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

  async acquire(endpoint: string, signal?: AbortSignal): Promise<Grant> {
    for (;;) {
      if (signal?.aborted) throw signal.reason;
      // The time is read when the step runs: a shared store's update may wait behind others'.
      const slot = await this.store.update((s) => takeTurn(s, endpoint, this.clock.now(), this.policy));
      if ('wait' in slot) {
        await this.clock.sleep(slot.wait - this.clock.now(), signal);
        continue;
      }
      if (slot.at > this.clock.now()) {
        await this.clock.sleep(slot.at - this.clock.now(), signal);
        // A 429 that came while this turn waited holds it too; the turn took nothing.
        if (stale(await this.store.read(), endpoint, slot.seq, this.clock.now())) {
          await this.store.update((s) => ({ state: givenUp(s, endpoint, slot, this.clock.now()), result: undefined }));
          continue;
        }
      }
      this.granted[endpoint] = (this.granted[endpoint] ?? 0) + 1;
      if (slot.probe) this.probes++;
      return { seq: slot.seq, at: slot.at, endpointSeq: slot.endpointSeq, probe: slot.probe, paced: slot.paced };
    }
  }

  async observe(endpoint: string, status: number, headers: HeaderMap, grant?: Grant): Promise<void> {
    const now = this.clock.now();
    const obs = readRateHeaders(headers, now);
    const moved = await this.store.update((s) => {
      const state = learn(s, endpoint, status, obs, grant, this.clock.now(), this.policy);
      const before = keyPace(s, this.policy, now);
      const after = keyPace(state, this.policy, now);
      return { state, result: after !== null && Math.abs(after - (before ?? 0)) > 0.05 * after };
    });
    if (moved) {
      const s = await this.store.read();
      this.logger.debug({ endpoint, buckets: bucketViews(s, this.policy, now) }, 'the rate budget believes anew');
    }
  }

  async pause(retryAfterMs: number, endpoint?: string, headers?: HeaderMap): Promise<void> {
    const now = this.clock.now();
    const until = now + Math.max(0, retryAfterMs);
    const limit = headers === undefined ? null : (readRateHeaders(headers, now)?.limit ?? null);
    this.pauses++;
    await this.store.update((s) => ({ state: pauseUntil(s, until, endpoint, limit, now), result: undefined }));
  }

  async snapshot(): Promise<BudgetSnapshot> {
    const s = await this.store.read();
    const now = this.clock.now();
    return {
      ratePerSecond: keyPace(s, this.policy, now),
      limit: keyBurst(s),
      buckets: bucketViews(s, this.policy, now),
      pausedUntilMs: s.pausedUntilMs,
      granted: { ...this.granted },
      pauses: this.pauses,
      probes: this.probes,
    };
  }
}
