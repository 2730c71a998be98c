import { MICROS_PER_MINUTE, MICROS_PER_SECOND, type Micros } from '../util/timestamp.ts';

// Which open runs a pass re-checks. All of them, whenever that fits OPEN_CHECK_SHARE of the key's
// rate over the time since they were last checked: a few hundred open runs cost a few list
// requests, and a pass is then exact for every change made before it began. Only a set too large
// for that share (passes back to back, RUNSYNC_SCHEDULE_RUNS=continuous, on an account with tens of
// thousands of runs open, many waiting for days) is checked as its runs come due, and the pass says
// how many it deferred (planOpenChecks).
//
// The due schedule. A run that changed lately is likely to change again soon, and
// one quiet for long is not: each is looked at again after an eighth of the time it had been quiet
// when last looked at, no more often than every ten seconds; a run scheduled to resume, as soon as
// its time has come.
//
// How long the quietest wait depends on what the key's rate allows. While the rate is not known,
// every open run is looked at at least every two minutes. Once it is, the runs most likely to
// change (the least quiet, or as the looks so far have found: open-hazard.ts) are looked at at
// least every 45 seconds (or every pass, when passes come further apart), as many as
// RECHECK_SHARE of the rate can list; the rest at least every half hour. A change to those then
// waits longer, but the share holds however many runs are open.

/** The soonest an open run is looked at again. */
export const RECHECK_MIN = 10 * MICROS_PER_SECOND;
/** The longest an open run goes without being looked at while the key's rate is not known. */
export const RECHECK_MAX = 2 * MICROS_PER_MINUTE;
/** The longest a run of the fast lane goes without being looked at. */
export const RECHECK_FAST = 45 * MICROS_PER_SECOND;
/** The longest any other open run goes without being looked at. */
export const RECHECK_SLOW = 30 * MICROS_PER_MINUTE;
/** The share of the key's rate the fast lane is sized to. */
export const RECHECK_SHARE = 0.055;
/**
 * Open runs a list request answers for until a pass has measured it (open-runs.ts learns it): a
 * ticket's other open runs fill pages too, and a run its listing leaves out takes no room.
 */
export const RUNS_PER_REQUEST = 80;
const QUIET_SHARE = 8;

/** Looks at open runs and the list requests they took, over the last passes (in _sync_state). */
export interface ListingYield {
  looks: number;
  requests: number;
}

/** Requests before a measured yield is trusted, and past which the figures are halved. */
const YIELD_REQUESTS_MIN = 10;
const YIELD_REQUESTS_MAX = 1000;

/** Open runs a list request answers for: as measured, within what a request can do. */
export function runsPerRequestOf(y: ListingYield | null): number {
  if (!y || y.requests < YIELD_REQUESTS_MIN) return RUNS_PER_REQUEST;
  return Math.min(200, Math.max(10, y.looks / y.requests));
}

export function addYield(y: ListingYield | null, looks: number, requests: number): ListingYield {
  const next = { looks: (y?.looks ?? 0) + looks, requests: (y?.requests ?? 0) + requests };
  if (next.requests > YIELD_REQUESTS_MAX) return { looks: next.looks / 2, requests: next.requests / 2 };
  return next;
}

export interface OpenRunCheck {
  updatedAt: Micros;
  /** When a pass last listed it (null: never, since it opened). */
  lastCheckedAt: Micros | null;
  scheduledResumeAt: Micros | null;
}

/** How quiet the run had been when last looked at. */
export function quietOf(run: OpenRunCheck): Micros {
  return Math.max(0, (run.lastCheckedAt ?? run.updatedAt) - run.updatedAt) as Micros;
}

/** The time between two looks at an open run that had been quiet for `quiet`, at most `longest`. */
export function recheckInterval(quiet: Micros, longest: Micros = RECHECK_MAX): Micros {
  return Math.min(longest, Math.max(RECHECK_MIN, Math.floor(quiet / QUIET_SHARE))) as Micros;
}

export function recheckDue(run: OpenRunCheck, now: Micros, longest: Micros = RECHECK_MAX): boolean {
  const last = run.lastCheckedAt;
  if (last === null) return true;
  if (run.scheduledResumeAt !== null && run.scheduledResumeAt <= now && last < run.scheduledResumeAt) return true;
  return now - last >= recheckInterval(quietOf(run), longest);
}

/** The share of the key's rate open-run checks may use, over the time since they were last checked. */
export const OPEN_CHECK_SHARE = 0.2;
/** Requests a second the share is taken of while the key's rate is not known. */
export const ASSUMED_RATE = 5;

export interface OpenCheckPlan<T> {
  check: T[];
  /** Open runs left for a later pass. */
  deferred: number;
  /** How long the deferred run unchecked longest has gone without a look (0: none deferred). */
  longestUnchecked: Micros;
}

export interface OpenCheckOptions<T> {
  /** The key's learned rate (null: not known). */
  ratePerSecond: number | null;
  /** List and detail requests that checking every open run costs. */
  costOfAll: number;
  /** Check every open run whatever it costs (`runsync sync --all-open`). */
  all?: boolean;
  changeRate?: ChangeRate<T>;
  runsPerRequest?: number;
}

/** What checking every open run may cost now: the share of the rate since the last check. */
export function openCheckAllowance(runs: readonly OpenRunCheck[], now: Micros, ratePerSecond: number | null): number {
  let last: Micros | null = null;
  for (const r of runs) if (r.lastCheckedAt !== null) last = Math.max(last ?? 0, r.lastCheckedAt);
  if (last === null) return Number.POSITIVE_INFINITY;
  const rate = ratePerSecond !== null && ratePerSecond > 0 ? ratePerSecond : ASSUMED_RATE;
  return (OPEN_CHECK_SHARE * rate * Math.max(0, now - last)) / MICROS_PER_SECOND;
}

/** Every open run when that fits the allowance (or is asked for), else those due. */
export function planOpenChecks<T extends OpenRunCheck>(
  runs: readonly T[],
  now: Micros,
  o: OpenCheckOptions<T>,
): OpenCheckPlan<T> {
  if (o.all || o.costOfAll <= openCheckAllowance(runs, now, o.ratePerSecond))
    return { check: [...runs], deferred: 0, longestUnchecked: 0 };
  const check = dueOpenRuns(runs, now, o.ratePerSecond, o.changeRate, o.runsPerRequest);
  const chosen = new Set<T>(check);
  let longestUnchecked = 0;
  for (const r of runs)
    if (!chosen.has(r)) longestUnchecked = Math.max(longestUnchecked, now - (r.lastCheckedAt ?? r.updatedAt));
  return { check, deferred: runs.length - check.length, longestUnchecked };
}

/** How likely a run is to change, by default the assumption the intervals rest on (open-hazard.ts). */
export type ChangeRate<T> = (run: T, quiet: Micros) => number;

/**
 * The open runs due now. `ratePerSecond` is the key's learned rate (null: not known): the runs
 * likeliest to change go in the fast lane while their looks fit RECHECK_SHARE of it.
 */
export function dueOpenRuns<T extends OpenRunCheck>(
  runs: readonly T[],
  now: Micros,
  ratePerSecond: number | null,
  changeRate: ChangeRate<T> = (_, quiet) => 1 / Math.max(1, quiet),
  runsPerRequest: number = RUNS_PER_REQUEST,
): T[] {
  if (ratePerSecond === null || !(ratePerSecond > 0)) return runs.filter((r) => recheckDue(r, now));
  let room = RECHECK_SHARE * ratePerSecond * runsPerRequest;
  // Passes minutes apart look at a run once a pass at most: the latest look was the last pass.
  const gap = Math.max(0, now - runs.reduce((a, r) => Math.max(a, r.lastCheckedAt ?? 0), 0));
  const ranked = runs
    .map((run) => {
      const quiet = quietOf(run);
      return { run, quiet, likely: changeRate(run, quiet) };
    })
    .sort((a, b) => b.likely - a.likely || a.quiet - b.quiet);
  const due: T[] = [];
  const early: { run: T; ratio: number }[] = [];
  let perPass = 0;
  for (const { run, quiet } of ranked) {
    // Looks per second this run takes in the fast lane.
    const looks = MICROS_PER_SECOND / Math.max(gap, recheckInterval(quiet, RECHECK_FAST));
    const fast = room >= looks;
    if (fast) room -= looks;
    const longest = fast ? RECHECK_FAST : RECHECK_SLOW;
    const interval = recheckInterval(quiet, longest);
    perPass += Math.min(1, gap / interval);
    if (recheckDue(run, now, longest)) {
      due.push(run);
      continue;
    }
    const waited = now - (run.lastCheckedAt ?? now);
    if (2 * waited >= interval) early.push({ run, ratio: waited / interval });
  }
  // Runs looked at in one pass (the first, or a lane's whole turn) come due together again, and
  // that pass then takes far longer than the others while every change waits for it. A pass takes
  // as many as passes this far apart take on average: besides the runs due, those nearest to due
  // (once half their interval has passed), so the turns spread over the interval.
  const more = Math.floor(perPass) - due.length;
  if (more > 0) {
    early.sort((a, b) => b.ratio - a.ratio);
    for (const { run } of early.slice(0, more)) due.push(run);
  }
  return due;
}
