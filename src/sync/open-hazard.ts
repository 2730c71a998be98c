import { MICROS_PER_SECOND, type Micros } from '../util/timestamp.ts';

// How likely an open run is to change, learned from the looks themselves. Every look at an open
// run tells whether it had changed since the look before, and how long that was: per reason it is
// open (running, waiting for approval, resolution pending...) and per how quiet it was (powers of
// two of seconds), changes seen over the time watched estimate its rate of change. Runs are then
// looked at most often where changes are found, whatever the account's runs do: a paused run
// that waits for weeks by design is not looked at as often as an approval that may come any
// minute. Until a kind has been watched, the estimate is the assumption the intervals rest on:
// a run quiet for q changes at a rate of about 1/q.

export interface HazardCell {
  /** Seconds watched. */
  watched: number;
  changes: number;
}

/** Cells by `${reason}/${bucket}`: kept in _sync_state between passes. */
export type HazardStats = Record<string, HazardCell>;

/** How many changes the assumption weighs, against those seen. */
const PRIOR_CHANGES = 2;
/** A cell's figures are halved past this many changes, so that newer behaviour counts. */
const CELL_CHANGES_MAX = 2000;
const BUCKET_MAX = 26;

export function quietBucket(quiet: Micros): number {
  const s = quiet / MICROS_PER_SECOND;
  return s < 1 ? 0 : Math.min(BUCKET_MAX, Math.floor(Math.log2(s)) + 1);
}

const cellKey = (reason: string, quiet: Micros) => `${reason}/${quietBucket(quiet)}`;

/** Records one look: the run had been quiet for `quiet` when looked at before, `watched` ago. */
export function observe(stats: HazardStats, reason: string, quiet: Micros, watched: Micros, changed: boolean): void {
  if (!(watched > 0)) return;
  const key = cellKey(reason, quiet);
  const cell = stats[key] ?? { watched: 0, changes: 0 };
  stats[key] = cell;
  cell.watched += watched / MICROS_PER_SECOND;
  if (changed) cell.changes++;
  if (cell.changes > CELL_CHANGES_MAX) {
    cell.changes /= 2;
    cell.watched /= 2;
  }
}

/** Changes per second expected of a run open for `reason` that had been quiet for `quiet`. */
export function changeRate(stats: HazardStats, reason: string, quiet: Micros): number {
  const seconds = Math.max(1, quiet / MICROS_PER_SECOND);
  const cell = stats[cellKey(reason, quiet)];
  // The assumption's PRIOR_CHANGES come with the time they would take at its rate.
  return ((cell?.changes ?? 0) + PRIOR_CHANGES) / ((cell?.watched ?? 0) + PRIOR_CHANGES * seconds);
}
