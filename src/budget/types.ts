// The rate budget every request of a process (and, with a shared store, of every process using the
// key) goes through. The words are those of docs/rate-budget.md's glossary.

/** What one response says of a bucket: its figure. */
export interface RateObservation {
  /** X-RateLimit-Limit: the bucket's burst. */
  limit: number | null;
  /** X-RateLimit-Remaining. */
  remaining: number | null;
  /** X-RateLimit-Reset as wall-clock milliseconds. */
  resetAtMs: number | null;
  /** When the response arrived (wall-clock ms). */
  atMs: number;
}

/** A figure placed among our requests. */
export interface Figure {
  at: number;
  remaining: number;
  resetAtMs: number | null;
  /** Grants drawing on the bucket up to and including the request the figure answered. */
  seq: number;
}

/** What the budget believes of one bucket. */
export interface Bucket {
  /** X-RateLimit-Limit. */
  burst: number;
  /** The endpoint whose own limit this is; null for a `key` bucket every request draws on. */
  endpoint: string | null;
  /** The longest whole seconds a figure's Reset lay ahead, in ms (1000 at least). */
  windowMs: number;
  /** Requests per second others take, the highest reading still believed, and when it was read. */
  others: number;
  othersAt: number;
  /** The share of the target paced to, and when it was last grown. */
  factor: number;
  factorAt: number;
  /** When the factor was last halved, and when a 429 last found others on the bucket. */
  cutAt: number;
  ranOutAt: number;
  /** A longer window a 429 reporting the bucket empty showed, until the probe after it settles it (0: none). */
  heldWindowMs: number;
  /** The newest figure learned. */
  last: Figure | null;
  /** No request drawing on this bucket starts before this. */
  pausedUntilMs: number;
  /** Its next request starts no earlier than this. */
  nextAt: number;
  /** When a figure of it last came. */
  seenAt: number;
  /**
   * Our turns drawing on it, counted by when they start, in slots a tenth of a window long: a
   * slot's start and its count. A turn given up before it was sent is taken out again.
   */
  starts: readonly (readonly [at: number, count: number])[];
}

export interface BudgetState {
  /** Grants made by every caller, and per endpoint. */
  seq: number;
  seqByEndpoint: Readonly<Record<string, number>>;
  /** By `${endpoint ?? 'key'}:${burst}`. */
  buckets: Readonly<Record<string, Bucket>>;
  /** No request at all starts before this (a 429 of a `key` bucket, or one without figures). */
  pausedUntilMs: number;
  /** The next request of any endpoint starts no earlier than this (the key's pace, the ceiling). */
  nextAt: number;
  /** A figure, or a runs-list page without one, has come since the start or the last 429. */
  heard: boolean;
  /** Whether the last 429 made the budget wait for a figure again (else: cold from the start). */
  rechecking: boolean;
  /** While waiting for a figure: when the one request out may start (0: none out). */
  coldOutAt: number;
  /** While waiting for a figure: a runs-list page was asked for, or went. */
  listAsked: boolean;
  /** The last grant made before the last 429: a turn numbered up to it and not yet sent waits again. */
  recheckSeq: number;
  /** When a probe was last asked for. */
  probeAtMs: number;
  /** 429s received by every caller. */
  limited: number;
  /**
   * Our turns of every endpoint, as a bucket counts them (slots of 100 ms, two seconds kept): a
   * `key` bucket first heard of counts those that went before its first figure came.
   */
  starts: readonly (readonly [at: number, count: number])[];
}

/** Settings shared by every process using the key. */
export interface BudgetPolicy {
  /** RUNSYNC_RATE_LIMIT: requests per second at most; null: no ceiling. */
  ceilingPerSecond: number | null;
  /** RUNSYNC_RATE_RESERVE: the share left to the key's other users, 0 to below 1. */
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

/** What the budget believes of a bucket, as status and /metrics show it. */
export interface BucketView {
  /** `key` for a bucket every request draws on, else the endpoint. */
  scope: string;
  burst: number;
  windowSeconds: number;
  /** Burst per window. */
  sustainedPerSecond: number;
  othersPerSecond: number;
  /** What requests drawing on it are paced to. */
  pacePerSecond: number;
}

/** What the budget believed when an operation ended, and how much of the key's rate it used. */
export interface BudgetUse {
  buckets: BucketView[];
  /** Requests per second paced to at the end (the key's pace); null: not paced. */
  ratePerSecond: number | null;
  /** The operation's requests as a share of what the key allowed over its duration. */
  usedShare: number | null;
}

export interface BudgetSnapshot {
  /** The key's pace; null when nothing paces it (no figure, no ceiling). */
  ratePerSecond: number | null;
  /** The burst of the `key` bucket last heard from; null before any figure. */
  limit: number | null;
  buckets: BucketView[];
  /** No request starts before this. */
  pausedUntilMs: number;
  /** Grants per endpoint made by this process. */
  granted: Record<string, number>;
  /** 429s this process received. */
  pauses: number;
  /** Probes this process was asked for. */
  probes: number;
}

/** A request's turn. */
export interface Grant {
  seq: number;
  /** When the request was allowed to start (wall-clock ms). */
  at: number;
  endpointSeq: number;
  /** Whether to send a probe alongside. */
  probe: boolean;
  /** The key's pace when the turn was granted; null when nothing paces it. */
  paced?: number | null;
}

export interface RateBudget {
  /** Resolves when a request to `endpoint` may start; rejects with the signal's reason when aborted. */
  acquire(endpoint: string, signal?: AbortSignal): Promise<Grant>;
  /** Learns from a response's status and headers (lower-case names); a 429's pause() comes first. */
  observe(endpoint: string, status: number, headers: HeaderMap, grant?: Grant): Promise<void>;
  /**
   * A 429's Retry-After: holds the refusing bucket's callers (its `headers` name it) for
   * `retryAfterMs` from now. Told before the 429 is observed, so no turn is handed out between.
   */
  pause(retryAfterMs: number, endpoint?: string, headers?: HeaderMap): Promise<void>;
  snapshot(): Promise<BudgetSnapshot>;
}

export type HeaderMap = Readonly<Record<string, string | string[] | undefined>>;

/** Time as the budget sees it; tests pass a manual clock. */
export interface BudgetClock {
  now(): number;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}
