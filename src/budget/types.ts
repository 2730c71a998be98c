import type { NeighbourUse } from './neighbour.ts';
import type { SpanFit } from './sent-log.ts';
import type { SharedLog } from './shared-log.ts';

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
 * The limiter a bucket seems to run, guessed from how its figures move: `window` when room comes
 * back all at once at Reset (a fixed window), `sliding` when it comes back as our own requests
 * leave a span (a sliding log), `bucket` when it comes back a little at a time whatever we sent
 * (token bucket, GCRA); `unknown` until the figures tell.
 */
export type LimiterGuess = 'unknown' | 'window' | 'sliding' | 'bucket';

/** One server figure: what Remaining was when a request we granted as number `seq` was counted. */
export interface Sample {
  at: number;
  remaining: number;
  resetAtMs: number | null;
  /** Grants made (by every caller) up to and including the request the figure answered. */
  seq: number;
  /** Of those, the ones that took nothing from the bucket (refused with a 429, or never sent). */
  unsent: number;
  /** When the request the figure answered started, when known. */
  start?: number;
  /**
   * Ours started with it, as close as round trips vary: any of them may have been counted after
   * it although granted before, so what was sent between two figures is known to within these.
   */
  alongside?: number;
}

/**
 * What is known of one server bucket. The spec limits per key, per organization and per endpoint,
 * and the headers report whichever has the least room, so each limit value seen is its own bucket.
 */
export interface BucketEstimate {
  limit: number;
  /** The endpoint this bucket belongs to alone; null for one every request draws on (key, org). */
  endpoint: string | null;
  guess: LimiterGuess;
  /** Sustained requests per second left to us (others' use deducted); null until learned. */
  rate: number | null;
  /** Whether `rate` was measured from the bucket running low, rather than guessed from one figure. */
  measured: boolean;
  /**
   * Whether `rate` is still read from Reset alone (a first figure's, or refusals'), with no span of
   * figures behind it: a guess, not a bound to find more above.
   */
  guessed?: boolean;
  /** Window length, for a `window` guess. */
  windowMs: number | null;
  /** Figures that spoke for each guess. */
  evidence: { window: number; bucket: number };
  /** Recent figures, oldest first, for measuring how fast room comes back. */
  samples: Sample[];
  /** The newest figure. */
  last: Sample | null;
  /** A window projected to begin after `last`'s Reset, whole again; used from its start on. */
  next: Sample | null;
  /** No request drawing on this bucket starts before this (its 429's Retry-After). */
  pausedUntilMs: number;
  /** The latest start granted on this bucket: turns are handed out in time order. */
  floorMs: number;
  /**
   * The bucket as a token bucket at the learned rate: its content at `levelAt`, after the turns
   * granted up to then; set again from every figure. Null until a rate is known.
   */
  level: number | null;
  levelAt: number;
  /** When a figure of this bucket last arrived. */
  seenAt: number;
  /** Starts of our requests drawing on this bucket, oldest first (see sent-log.ts). */
  sent?: readonly SentEntry[];
  /** Whether the figures have shown the limiter is not a fixed window (see learn.ts). */
  notWindow?: boolean;
  /** Whether room has been seen coming back before Reset, as no fixed window's does (see learn.ts). */
  refilledEarly?: boolean;
  /** The span a sliding log would keep, as the figures bound it (see sent-log.ts). */
  fit?: SpanFit;
  /** The log read as one others draw on too (see shared-log.ts). */
  shared?: SharedLog;
  /** The most whole seconds any figure's Reset lay ahead of it (at least one), in ms. */
  resetSpanMs?: number;
  /** Others' requests the bucket held at the newest figure, beyond ours. */
  others?: number;
  /** The window last projected, kept past its figures: where it began among our turns. */
  edge?: Sample;
  /** The rate as the figures read it, while `rate` is a window's less others' use of it. */
  readRate?: number | null;
  /** Others' use of a fixed window, read through it (see neighbour.ts). */
  neighbour?: NeighbourUse;
}

/**
 * Starts of our requests: when (the latest of them), how many, and the first of them when joined;
 * then, once any was answered, a base time and how many were answered within each class of time
 * beyond it (see sent-log.ts).
 */
export type SentEntry = readonly [at: number, count: number, first?: number, base?: number, ...answered: number[]];

export interface BudgetState {
  /** Grants made so far by every caller, and per endpoint. */
  seq: number;
  seqByEndpoint: Readonly<Record<string, number>>;
  /** By `${endpoint ?? '*'}:${limit}`. */
  buckets: Readonly<Record<string, BucketEstimate>>;
  /** No request at all starts before this (a 429 of a bucket every request draws on). */
  pausedUntilMs: number;
  /** Pacing under the ceiling: the earliest start of the next request. */
  nextSlotMs: number;
  /** When a probe (a one-item runs-list page, for its headers) was last asked for. */
  probeAtMs: number;
  /** Starts made before any bucket was known (see sent-log.ts). */
  firstSent?: readonly SentEntry[];
  /** When the first turn was granted. */
  firstGrantMs: number;
  /** Whether a runs-list page (the one response that carries the limits) has come back yet. */
  heard: boolean;
  /** Whether a runs-list page has been granted a turn, the one whose answer may tell the limits. */
  listAsked?: boolean;
  /** How long a request takes from its start to its response, recently at most. */
  latencyMs: number;
  /** The longest and shortest round trips over a longer memory: how much they vary is the difference. */
  latencyLowMs?: number;
  latencyHighMs?: number;
  /** Round trips noted so far (see round-trips.ts). */
  roundTrips?: number;
  /** The shortest time from a logged start to its answer lately (see sent-log.ts's answered). */
  quickestMs?: number;
  /** 429s received by every caller. */
  limited: number;
  /** Grants that took nothing from any bucket (refused, or given up before sending), and per endpoint. */
  unsent: number;
  unsentByEndpoint: Readonly<Record<string, number>>;
  /**
   * The numbers of the recent turns that took nothing, overall and per endpoint: a turn granted
   * before a figure and given up after it must not give that figure's room back.
   */
  unsentSeqs: readonly number[];
  unsentEndpointSeqs: Readonly<Record<string, readonly number[]>>;
  /** The bucket that sent each endpoint's latest 429, so its pause holds the right callers. */
  refusedBy: Readonly<Record<string, string>>;
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

/** What the budget has learned, as status and /metrics show it. */
export interface BucketView {
  /** `key` for a bucket every request draws on (the key's, the organization's), else the endpoint. */
  scope: string;
  /** X-RateLimit-Limit: the bucket's size, i.e. its burst. */
  limit: number;
  guess: LimiterGuess;
  ratePerSecond: number | null;
  measured: boolean;
  windowSeconds: number | null;
}

/** What the budget had learned when an operation ended, and how much of the key's rate it used. */
export interface BudgetUse {
  buckets: BucketView[];
  /** Requests per second paced to at the end (the tightest bucket every request draws on, less the reserve). */
  ratePerSecond: number | null;
  /** The operation's requests per second over its duration, as a share of the key's learned rate. */
  usedShare: number | null;
}

export interface BudgetSnapshot {
  /** Requests per second currently paced to; null when unpaced (nothing learned, no ceiling). */
  ratePerSecond: number | null;
  /** The key's bucket size as last reported; null before any response told it. */
  limit: number | null;
  buckets: BucketView[];
  /** No request starts before this (a 429's Retry-After). */
  pausedUntilMs: number;
  /** Grants per endpoint made by this process. */
  granted: Record<string, number>;
  /** 429s this process received. */
  pauses: number;
  /** Probes this process sent. */
  probes: number;
}

/** A request's turn: its number, so the figures its response carries can be placed. */
export interface Grant {
  seq: number;
  /** When the request was allowed to start (wall-clock ms). */
  at: number;
  /** The same, counting this endpoint's requests alone. */
  endpointSeq: number;
  /** Set when the budget would like a probe sent: its figures are getting old. */
  probe: boolean;
  /** Requests per second the budget paced to when it granted the turn; null when nothing limits us yet. */
  paced?: number | null;
}

export interface RateBudget {
  /** Resolves when a request to `endpoint` may start; rejects with the signal's reason when aborted. */
  acquire(endpoint: string, signal?: AbortSignal): Promise<Grant>;
  /** Learns from a response's status and headers (lower-case names). */
  observe(endpoint: string, status: number, headers: HeaderMap, grant?: Grant): Promise<void>;
  /**
   * A 429: holds the callers of the bucket that refused (every caller, unless the response named a
   * bucket of the endpoint's own) for `retryAfterMs` from now.
   */
  pause(retryAfterMs: number, endpoint?: string): Promise<void>;
  snapshot(): Promise<BudgetSnapshot>;
}

export type HeaderMap = Readonly<Record<string, string | string[] | undefined>>;

/** Time as the budget sees it; tests pass a manual clock. */
export interface BudgetClock {
  now(): number;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}
