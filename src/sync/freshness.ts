import { MICROS_PER_SECOND, type Micros } from '../util/timestamp.ts';

// How fresh a pass left the warehouse: for every run it loaded, and every catalog version it
// recorded, the time from the change (its updated_at) to the commit that made it visible in
// runsync.duckdb, and to the end of the export that put it in the Parquet tree. A pass keeps a
// bounded sample (every other value dropped when full, so memory stays flat on a first sync of
// millions); the largest lag is exact.

/** Lags in seconds. */
export interface LagStats {
  count: number;
  p50: number;
  p95: number;
  max: number;
}

export interface StageLags {
  /** To the commit in runsync.duckdb. */
  warehouse: LagStats | null;
  /** To the end of the export that wrote it to Parquet (null: the pass did not export). */
  parquet: LagStats | null;
}

/** Runs' lags at the top level (as passes recorded them before catalog objects were measured). */
export interface FreshnessSummary extends StageLags {
  catalog?: StageLags;
}

const CAP = 8_192;

export class FreshnessSample {
  private readonly changed: number[] = [];
  private readonly committed: number[] = [];
  private stride = 1;
  private skipped = 0;
  private count = 0;
  private maxLag = 0;
  private oldestChange = Number.POSITIVE_INFINITY;
  private exportedAt: Micros | null = null;
  private skipping = false;

  /** Records nothing from now on (a first sync, whose changes are history). */
  skip(): void {
    this.skipping = true;
  }

  /** Runs changed at `updatedAt` were committed at `at`. */
  record(updatedAt: readonly Micros[], at: Micros): void {
    if (this.skipping) return;
    for (const u of updatedAt) {
      this.count++;
      this.maxLag = Math.max(this.maxLag, at - u);
      this.oldestChange = Math.min(this.oldestChange, u);
      if (++this.skipped < this.stride) continue;
      this.skipped = 0;
      this.changed.push(u);
      this.committed.push(at);
      if (this.changed.length >= CAP) this.halve();
    }
  }

  /** The export that wrote everything recorded so far finished at `at`. */
  exported(at: Micros): void {
    this.exportedAt = at;
  }

  summary(): StageLags {
    if (this.count === 0) return { warehouse: null, parquet: null };
    const lags = this.changed.map((u, i) => (this.committed[i] as number) - u);
    const warehouse = stats(lags, this.count, this.maxLag);
    const exportedAt = this.exportedAt;
    const parquet =
      exportedAt === null
        ? null
        : stats(
            this.changed.map((u) => exportedAt - u),
            this.count,
            exportedAt - this.oldestChange,
          );
    return { warehouse, parquet };
  }

  private halve(): void {
    for (let i = 0, j = 0; i < this.changed.length; i += 2, j++) {
      this.changed[j] = this.changed[i] as number;
      this.committed[j] = this.committed[i] as number;
    }
    this.changed.length = Math.ceil(this.changed.length / 2);
    this.committed.length = this.changed.length;
    this.stride *= 2;
  }
}

/** A pass's two streams of changes: runs, and catalog objects. */
export class Freshness {
  readonly runs = new FreshnessSample();
  readonly catalog = new FreshnessSample();

  exported(at: Micros): void {
    this.runs.exported(at);
    this.catalog.exported(at);
  }

  /** Null when the pass measured nothing. */
  summary(): FreshnessSummary | null {
    const runs = this.runs.summary();
    const catalog = this.catalog.summary();
    if (!runs.warehouse && !catalog.warehouse) return null;
    return catalog.warehouse ? { ...runs, catalog } : runs;
  }
}

function stats(lagsMicros: number[], count: number, maxMicros: number): LagStats {
  const sorted = lagsMicros.sort((a, b) => a - b);
  const at = (q: number) =>
    (sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0) / MICROS_PER_SECOND;
  return { count, p50: round(at(0.5)), p95: round(at(0.95)), max: round(Math.max(0, maxMicros) / MICROS_PER_SECOND) };
}

function round(s: number): number {
  return Math.round(Math.max(0, s) * 10) / 10;
}

/**
 * The lag over several passes (the last hour's): the median of their medians weighted by runs,
 * the largest p95 (a bound: the p95 of the union is no larger), the largest lag.
 */
export function combineLags(parts: readonly LagStats[]): LagStats | null {
  const some = parts.filter((p) => p.count > 0);
  if (some.length === 0) return null;
  const byP50 = [...some].sort((a, b) => a.p50 - b.p50);
  const total = some.reduce((n, p) => n + p.count, 0);
  let seen = 0;
  let p50 = byP50[byP50.length - 1]?.p50 ?? 0;
  for (const p of byP50) {
    seen += p.count;
    if (seen >= total / 2) {
      p50 = p.p50;
      break;
    }
  }
  return {
    count: total,
    p50,
    p95: Math.max(...some.map((p) => p.p95)),
    max: Math.max(...some.map((p) => p.max)),
  };
}
