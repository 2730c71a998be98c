import { MICROS_PER_DAY, type Micros } from '../util/timestamp.ts';

// Created-time windows. The runs list filters only by created time, so created time splits the
// work into half-open windows [from, to); it is never the change cursor.

export interface Window {
  from: Micros;
  to: Micros;
}

export interface WindowInput {
  /** The `to` of the last completed window, or null before the first pass. */
  watermark: Micros | null;
  /** RUNSYNC_START_DATE: the first pass's lower bound. */
  startDate: Micros;
  /** RUNSYNC_LOOKBACK: how much of the recent past every pass reads again. */
  lookback: Micros;
  /** When the pass started (the local clock). */
  passStart: Micros;
  /** How far before the pass's start the window ends, so runs being created right now are left
   * to the next pass instead of being half-seen. */
  settle: Micros;
}

export function runsWindow(input: WindowInput): Window {
  const to = input.passStart - input.settle;
  const from = input.watermark === null ? input.startDate : Math.max(input.startDate, input.watermark - input.lookback);
  return { from: Math.min(from, to), to };
}

/** Splits [from, to) into consecutive slices of at most `size` (a day by default). */
export function slices(range: Window, size: Micros = MICROS_PER_DAY): Window[] {
  if (size <= 0) throw new RangeError('slice size must be positive');
  const out: Window[] = [];
  for (let a = range.from; a < range.to; a += size) out.push({ from: a, to: Math.min(a + size, range.to) });
  return out;
}
