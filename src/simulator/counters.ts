// What the simulator saw: requests per endpoint and status, each with its wall-clock time, so tests
// and benches can check rates ("never more than the budget in any second") and costs.

export interface RequestRecord {
  /** Wall-clock milliseconds when the request arrived. */
  t: number;
  endpoint: string;
  /** HTTP status; 0 when the connection was reset without a response. */
  status: number;
  keyId: string | null;
  /** The injected fault that made this answer, if one did (e.g. `server_error`, `spurious_429`). */
  fault?: string;
  /** The Retry-After of a fault's 429, in seconds. */
  retryAfter?: number;
}

export interface CounterSnapshot {
  total: number;
  byEndpoint: Record<string, Record<string, number>>;
  byStatus: Record<string, number>;
  /** Requests in the busiest aligned wall-clock second (what a per-second limit counts). */
  busiestSecond: number;
}

const MAX_RECORDS = 2_000_000;

export class SimCounters {
  private records: RequestRecord[] = [];

  record(r: RequestRecord): void {
    if (this.records.length >= MAX_RECORDS) this.records.splice(0, MAX_RECORDS / 2);
    this.records.push(r);
  }

  reset(): void {
    this.records = [];
  }

  log(): readonly RequestRecord[] {
    return this.records;
  }

  snapshot(): CounterSnapshot {
    const byEndpoint: Record<string, Record<string, number>> = {};
    const byStatus: Record<string, number> = {};
    for (const r of this.records) {
      byEndpoint[r.endpoint] ??= {};
      const e = byEndpoint[r.endpoint] as Record<string, number>;
      e[r.status] = (e[r.status] ?? 0) + 1;
      byStatus[r.status] = (byStatus[r.status] ?? 0) + 1;
    }
    return { total: this.records.length, byEndpoint, byStatus, busiestSecond: this.maxInAlignedWindow(1000) };
  }

  count(endpoint?: string, status?: number): number {
    let n = 0;
    for (const r of this.records) {
      if ((endpoint === undefined || r.endpoint === endpoint) && (status === undefined || r.status === status)) n++;
    }
    return n;
  }

  /** The most requests that arrived within any window of `windowMs` (sliding), optionally filtered. */
  maxInWindow(windowMs: number, keep: (r: RequestRecord) => boolean = () => true): number {
    const times = this.records
      .filter(keep)
      .map((r) => r.t)
      .sort((a, b) => a - b);
    let best = 0;
    let lo = 0;
    for (let hi = 0; hi < times.length; hi++) {
      while ((times[hi] as number) - (times[lo] as number) >= windowMs) lo++;
      best = Math.max(best, hi - lo + 1);
    }
    return best;
  }

  /** The most requests inside one aligned window (as a fixed-window limiter counts them). */
  maxInAlignedWindow(windowMs: number, keep: (r: RequestRecord) => boolean = () => true): number {
    const perWindow = new Map<number, number>();
    for (const r of this.records) {
      if (!keep(r)) continue;
      const w = Math.floor(r.t / windowMs);
      perWindow.set(w, (perWindow.get(w) ?? 0) + 1);
    }
    let best = 0;
    for (const n of perWindow.values()) best = Math.max(best, n);
    return best;
  }
}
