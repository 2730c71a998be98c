import { MICROS_PER_MINUTE, MICROS_PER_SECOND, type Micros } from '../util/timestamp.ts';

// Which open runs a pass re-checks. With passes every few minutes, all of them, every pass. With
// passes back to back (RUNSYNC_SCHEDULE_RUNS=continuous) that would spend most of the key's rate on
// runs that are open but idle: an account with a million runs in its horizon holds tens of
// thousands, many waiting for days. A run that changed lately is likely to change again soon, and
// one quiet for long is not: each is looked at again after an eighth of the time it had been quiet
// when last looked at, no more often than every ten seconds and at least every two minutes; a run
// scheduled to resume, as soon as its time has come. Two minutes keeps the checks of 45,000 open
// runs (a million in the horizon) under a tenth of a 50 requests/s key.

/** The soonest an open run is looked at again. */
export const RECHECK_MIN = 10 * MICROS_PER_SECOND;
/** The longest an open run goes without being looked at. */
export const RECHECK_MAX = 2 * MICROS_PER_MINUTE;
const QUIET_SHARE = 8;

export interface OpenRunCheck {
  updatedAt: Micros;
  /** When a pass last listed it (null: never, since it opened). */
  lastCheckedAt: Micros | null;
  scheduledResumeAt: Micros | null;
}

/** The time between two looks at an open run that had been quiet for `quiet`. */
export function recheckInterval(quiet: Micros): Micros {
  return Math.min(RECHECK_MAX, Math.max(RECHECK_MIN, Math.floor(quiet / QUIET_SHARE))) as Micros;
}

export function recheckDue(run: OpenRunCheck, now: Micros): boolean {
  const last = run.lastCheckedAt;
  if (last === null) return true;
  if (run.scheduledResumeAt !== null && run.scheduledResumeAt <= now && last < run.scheduledResumeAt) return true;
  return now - last >= recheckInterval(Math.max(0, last - run.updatedAt) as Micros);
}
