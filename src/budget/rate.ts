import type { Logger } from '../util/logger.ts';
import { silentLogger } from '../util/logger.ts';
import { systemClock } from './clock.ts';
import { readRateHeaders } from './headers.ts';
import { MemoryBudgetStore } from './memory-store.ts';
import { type Answer, answered, learn, pacedRate, pauseUntil, startedLate, takeSlot, unsent } from './policy.ts';
import { outgrown, overdrawn } from './room.ts';
import { tookMs } from './round-trips.ts';
import { ON_TIME_MS } from './sent-log.ts';
import type {
  BudgetClock,
  BudgetPolicy,
  BudgetSnapshot,
  BudgetState,
  BudgetStore,
  Grant,
  HeaderMap,
  RateBudget,
} from './types.ts';
import { bucketViews, keyLimit } from './views.ts';

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
const MAX_TURNS = 6;
const LATE_WAKE_MS = 25;
/** A pace this much lower than a turn was granted at has it checked again before it is sent. */
const PACE_LOWERED = 0.95;

/** The budget of one API key, shared by every request made through it. */
export class SharedRateBudget implements RateBudget {
  readonly policy: Readonly<BudgetPolicy>;
  private readonly store: BudgetStore;
  private readonly clock: BudgetClock;
  private readonly logger: Logger;
  private readonly granted: Record<string, number> = {};
  private pauses = 0;
  private probes = 0;
  /** The longest a request of this process took, as told to the shared state. */
  private toldLatency = 0;
  /** Whether a response has been seen, so the shared state need not be told again. */
  private heard = false;
  /** When each grant's start was logged in the shared state, for its answer to be placed. */
  private readonly logged = new WeakMap<Grant, number>();
  /**
   * Answers not yet told to the shared state: they go with this process's next update of it (its
   * next turn, as a rule, moments later), so telling them costs no write of its own.
   */
  private answers: Answer[] = [];

  /** The answers to tell with an update, taken so no other update tells them again. */
  private takeAnswers(): Answer[] {
    const out = this.answers;
    this.answers = [];
    return out;
  }

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
    for (let turn = 1; ; turn++) {
      if (signal?.aborted) throw signal.reason;
      // The time is read when the step runs, not when it is queued: with a shared store the update
      // may wait behind others, and a slot cut from a stale "now" would lie in the past.
      const told = this.takeAnswers();
      const slot = await this.store.update((s) => takeSlot(answered(s, told), endpoint, this.clock.now(), this.policy));
      const now = this.clock.now();
      if ('wait' in slot) {
        await this.clock.sleep(slot.wait - now, signal);
        turn--;
        continue;
      }
      let started = now;
      if (slot.at > now) {
        await this.clock.sleep(slot.at - now, signal);
        // A 429 seen by another caller while we waited, or waking late (a busy event loop), makes
        // the turn stale: sent now, it could land in a window whose room was handed out already.
        // So does a pace lowered since the turn was granted, when the turn overruns the log the
        // figures now read: at a few requests a second turns are handed out seconds ahead, and
        // those granted at the old pace went on being refused for as long. Ask again (bounded, so
        // a slow process still makes progress); the stale turn is counted as not sent.
        const stale = (state: BudgetState) =>
          (slot.paced != null &&
            (pacedRate(state, this.policy) ?? slot.paced) < slot.paced * PACE_LOWERED &&
            overdrawn(state, endpoint, slot.at, this.policy)) ||
          outgrown(state, endpoint, slot, this.policy);
        const state = await this.store.read();
        started = this.clock.now();
        if (turn < MAX_TURNS && (state.pausedUntilMs > started || started - slot.at > LATE_WAKE_MS || stale(state))) {
          await this.store.update((s) => ({ state: unsent(s, endpoint, slot), result: undefined }));
          continue;
        }
      }
      // Our starts are paced by when earlier ones happened, so a late one is logged as it is; so is
      // a turn whose grant came back late. The request goes out at once and the log is told after:
      // a busy shared store can take longer to write than the log allows a start to be off, and a
      // start logged before that wait but sent after it left the log before the server let it go.
      const logged = started - slot.at > ON_TIME_MS ? started : slot.at;
      if (logged !== slot.at) this.tellLate(endpoint, slot.at, logged);
      this.granted[endpoint] = (this.granted[endpoint] ?? 0) + 1;
      if (slot.probe) this.probes++;
      const grant = {
        seq: slot.seq,
        at: Math.max(slot.at, this.clock.now()),
        endpointSeq: slot.endpointSeq,
        probe: slot.probe,
        paced: slot.paced ?? null,
      };
      this.logged.set(grant, logged);
      return grant;
    }
  }

  /**
   * Moves a late start in the shared log without holding its request back. The store applies this
   * process's updates in turn, so the answer to the request, told with a later one, finds it moved.
   */
  private tellLate(endpoint: string, plannedMs: number, atMs: number): void {
    this.store
      .update((s) => ({ state: startedLate(s, endpoint, plannedMs, atMs), result: undefined }))
      .catch((e: unknown) => this.logger.debug({ error: String(e) }, 'could not log a late start'));
  }

  async observe(endpoint: string, status: number, headers: HeaderMap, grant?: Grant): Promise<void> {
    const obs = readRateHeaders(headers, this.clock.now());
    const loggedMs = grant === undefined ? undefined : this.logged.get(grant);
    // A refused request was never counted, and its start leaves the log.
    if (loggedMs !== undefined && status !== 429) {
      this.answers.push({ endpoint, loggedMs, took: this.clock.now() - loggedMs });
    }
    if (!obs) {
      await this.noteLatency(grant);
      // Only a runs-list page carries the limits (as the spec has it); once one came back without
      // them, none will tell, and requests stop waiting for one. A refusal without them says only
      // to wait, not that the volley may go.
      if (this.heard || endpoint !== 'runs.list' || status === 429) return;
      await this.store.update((s) => ({ state: s.heard ? s : { ...s, heard: true }, result: undefined }));
      this.heard = true;
      return;
    }
    this.heard = true;
    const told = this.takeAnswers();
    const change = await this.store.update((s0) => {
      const s = answered(s0, told);
      const state = learn(s, obs, status === 429, endpoint, grant, this.policy);
      const before = pacedRate(s, this.policy);
      const after = pacedRate(state, this.policy);
      return { state, result: before !== after && after !== null && Math.abs(after - (before ?? 0)) > 0.05 * after };
    });
    if (change) {
      const s = await this.store.read();
      this.logger.debug({ endpoint, limit: obs.limit, buckets: bucketViews(s) }, 'learned the rate limit');
    }
  }

  /**
   * A response without figures still says how long requests take from their turn (queueing in a
   * busy process included); the shared state is told only when that grew, so it costs little.
   * Any rise past a few ms is told: the slack kept for turns handed out before their predecessors'
   * answers is how much round trips vary, and the first pages, which carry the figures, often come
   * back alike; a rise of a fifth and 10 ms left detail fetches a few ms slower unseen, and a
   * sliding log still counted them when their successors a span on went out.
   */
  private async noteLatency(grant: Grant | undefined): Promise<void> {
    if (grant === undefined) return;
    const took = this.clock.now() - grant.at;
    if (took <= this.toldLatency + ON_TIME_MS) return;
    this.toldLatency = took;
    await this.store.update((s) => ({ state: tookMs(s, took), result: undefined }));
  }

  async pause(retryAfterMs: number, endpoint?: string): Promise<void> {
    const until = this.clock.now() + Math.max(0, retryAfterMs);
    this.pauses++;
    await this.store.update((s) => ({ state: pauseUntil(s, until, endpoint), result: undefined }));
  }

  async snapshot(): Promise<BudgetSnapshot> {
    const s = await this.store.read();
    return {
      ratePerSecond: pacedRate(s, this.policy, this.clock.now()),
      limit: keyLimit(s),
      buckets: bucketViews(s),
      pausedUntilMs: s.pausedUntilMs,
      granted: { ...this.granted },
      pauses: this.pauses,
      probes: this.probes,
    };
  }
}
