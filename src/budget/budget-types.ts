// The rate budget every request of a process (and, with a shared store, of every process using the
// key) goes through. The budget decides when a request may start; the store keeps the state those
// decisions need, so the same policy can run over memory (one process) or Redis (many).

/** What the API told us about its limits, read from one response. */
export interface RateObservation {
  /** X-RateLimit-Limit: the active bucket's size. */
  limit: number | null;
  /** X-RateLimit-Remaining. */
  remaining: number | null;
  /** X-RateLimit-Reset as wall-clock milliseconds. */
  resetAtMs: number | null;
  /** When the response arrived (wall-clock ms). */
  atMs: number;
}

/**
 * Everything the policy remembers. Plain JSON so a shared store can keep it as one value; all times
 * are wall-clock milliseconds.
 */
export interface BudgetState {
  /** Learned bucket size; null until a response carried X-RateLimit-Limit. */
  limit: number | null;
  /** Requests left in the current window: the server's last figure, or `limit` for a projected window. */
  remaining: number | null;
  /** End of the current window (observed or projected); null while unknown. */
  resetAtMs: number | null;
  /** Estimated window length: the longest time-to-reset a success reported, in whole seconds. */
  windowMs: number | null;
  /** The same, from 429s only (a penalty may outlast the window); used while `windowMs` is unknown. */
  windowHintMs: number | null;
  /** Requests granted since `remaining` was last set (the window counter). */
  grantedInWindow: number;
  /** No request may start before this (a 429's Retry-After applies to every caller). */
  pausedUntilMs: number;
  /** Pacing: the earliest start of the next request. */
  nextSlotMs: number;
  /**
   * Endpoints found to have a bucket of their own, tighter than the key's (the spec limits per key,
   * per organization and per endpoint). Each is paced on its own as well as under the key's budget,
   * so one slow endpoint neither holds the others to its pace nor keeps meeting 429s.
   */
  endpoints: Readonly<Record<string, EndpointBucket>>;
}

export interface EndpointBucket {
  /** The endpoint's own bucket size. */
  limit: number;
  /** Its window length, in whole seconds (the longest time-to-reset seen). */
  windowMs: number;
  /** The earliest start of this endpoint's next request. */
  nextSlotMs: number;
}

/** Settings shared by every process using the key. */
export interface BudgetPolicy {
  /** Requests per second this key may be used for at most (RUNSYNC_RATE_LIMIT); null: no ceiling. */
  ceilingPerSecond: number | null;
  /** Share of the key's budget left for its other users, 0 to < 1. */
  reserve: number;
}

export interface BudgetStore {
  read(): Promise<BudgetState>;
  /**
   * Applies `step` to the current state atomically and keeps the state it returns. A shared store
   * may run `step` more than once (optimistic concurrency), so it must be a pure function.
   */
  update<R>(step: (state: BudgetState) => { state: BudgetState; result: R }): Promise<R>;
}

export interface BudgetSnapshot extends BudgetState {
  /** Requests per second currently paced to; null when unpaced (nothing learned, no ceiling). */
  ratePerSecond: number | null;
  /** Grants per endpoint made by this process. */
  granted: Record<string, number>;
  pauses: number;
}

export interface RateBudget {
  /** Resolves when a request to `endpoint` may start; rejects with the signal's reason when aborted. */
  acquire(endpoint: string, signal?: AbortSignal): Promise<void>;
  /** Learns from a response's status and headers (lower-case names). */
  observe(endpoint: string, status: number, headers: HeaderMap): Promise<void>;
  /** Holds every caller for `retryAfterMs` from now. */
  pause(retryAfterMs: number): Promise<void>;
  snapshot(): Promise<BudgetSnapshot>;
}

export type HeaderMap = Readonly<Record<string, string | string[] | undefined>>;

/** Time as the budget sees it; tests pass a manual clock. */
export interface BudgetClock {
  now(): number;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}
