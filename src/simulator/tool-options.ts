import type { Micros } from '../util/timestamp.ts';
import type { RunPlan, RunUniverse } from './runs.ts';

// Run counts per recorded tool name, kept up to date as the clock moves instead of recounted from
// every run on each request (regenerating a large world's runs is slow; a wall clock moves on
// every request). The clock only moves forward, so each run is read once when it is created and
// again only when one of its versions comes due; only runs that can still change keep their names.

export class ToolOptionCounter {
  private at: Micros = Number.NEGATIVE_INFINITY;
  /** Runs below this index have been read. */
  private nextIndex = 0;
  private readonly counts = new Map<string, number>();
  /** Names counted for runs that can still change. */
  private readonly live = new Map<number, string[]>();
  /** Min-heap of [time of the run's next change, run index]. */
  private readonly due: [Micros, number][] = [];

  constructor(private readonly runs: RunUniverse) {}

  /** Runs per recorded tool name at `now`; the map is shared, read it before the next call. */
  countsAt(now: Micros): ReadonlyMap<string, number> {
    if (now < this.at) this.reset();
    while (this.due.length > 0 && (this.due[0] as [Micros, number])[0] <= now) {
      this.refresh(this.pop()[1], now);
    }
    const end = this.runs.firstIndexAtOrAfter(now, true);
    for (; this.nextIndex < end; this.nextIndex++) this.refresh(this.nextIndex, now);
    this.at = now;
    return this.counts;
  }

  private reset(): void {
    this.at = Number.NEGATIVE_INFINITY;
    this.nextIndex = 0;
    this.counts.clear();
    this.live.clear();
    this.due.length = 0;
  }

  private refresh(index: number, now: Micros): void {
    const plan = this.runs.plan(index, false);
    const version = this.runs.versionAt(plan, now);
    const names = version ? [...this.runs.toolNamesAt(plan, version)] : [];
    for (const n of this.live.get(index) ?? []) this.add(n, -1);
    for (const n of names) this.add(n, 1);
    const next = nextChange(plan, now);
    if (next === null) {
      this.live.delete(index);
    } else {
      this.live.set(index, names);
      this.push([next, index]);
    }
  }

  private add(name: string, by: number): void {
    const n = (this.counts.get(name) ?? 0) + by;
    if (n === 0) this.counts.delete(name);
    else this.counts.set(name, n);
  }

  private push(item: [Micros, number]): void {
    const h = this.due;
    h.push(item);
    for (let i = h.length - 1; i > 0; ) {
      const parent = (i - 1) >> 1;
      if ((h[parent] as [Micros, number])[0] <= item[0]) break;
      h[i] = h[parent] as [Micros, number];
      h[parent] = item;
      i = parent;
    }
  }

  private pop(): [Micros, number] {
    const h = this.due;
    const top = h[0] as [Micros, number];
    const last = h.pop() as [Micros, number];
    if (h.length === 0) return top;
    h[0] = last;
    for (let i = 0; ; ) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < h.length && (h[l] as [Micros, number])[0] < (h[m] as [Micros, number])[0]) m = l;
      if (r < h.length && (h[r] as [Micros, number])[0] < (h[m] as [Micros, number])[0]) m = r;
      if (m === i) break;
      [h[i], h[m]] = [h[m] as [Micros, number], h[i] as [Micros, number]];
      i = m;
    }
    return top;
  }
}

/** When the run next looks different (it appears, or its next version comes), or null if never. */
function nextChange(plan: RunPlan, now: Micros): Micros | null {
  if (plan.visibleAt > now) return plan.visibleAt;
  for (const v of plan.versions) if (v.at > now) return v.at;
  return null;
}
