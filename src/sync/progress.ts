import type { ApiClient, ListPage } from '../api/index.ts';
import type { Logger } from '../util/logger.ts';
import { DetailFetcher, type DetailSource } from './detail-fetcher.ts';
import type { SyncDeps } from './types.ts';

// How far long work has come: runs listed, details asked for and fetched, the rate, and when it
// should end. A tracker is given to the engine as a decorated set of dependencies (the client's
// listings and the detail source count as they go), so the engine itself stays as it is; the
// CLI's bar and the log lines read the same tracker.
//
// The API does not say how many runs a window holds, so the end is known only in part: a range
// of several slices (backfills, long reconciliations) is estimated from the slices done; within
// one slice, once its listing has ended, from the details still to fetch at the recent rate.
// While a single slice is still being listed, the ETA is unknown and is shown as such.

export interface ProgressSnapshot {
  what: string;
  elapsedMs: number;
  /** Run summaries read. */
  listed: number;
  /** Details asked for so far. */
  toFetch: number;
  /** Details answered (loaded or kept aside to fetch again). */
  fetched: number;
  /** A listing is in progress: more details may yet be asked for. */
  listing: boolean;
  slices: { done: number; total: number } | null;
  /** Details per second over the last half minute; null before there is one. */
  ratePerSecond: number | null;
  /** Milliseconds left; null when unknown. */
  etaMs: number | null;
}

const RATE_WINDOW_MS = 30_000;
const SAMPLE_EVERY_MS = 250;

export class ProgressTracker {
  private listed = 0;
  private toFetch = 0;
  private fetched = 0;
  private listings = 0;
  private slices: { done: number; total: number } | null = null;
  private readonly started: number;
  private samples: { at: number; fetched: number }[] = [];

  constructor(
    readonly what: string,
    private readonly clock: () => number = Date.now,
  ) {
    this.started = clock();
    this.samples.push({ at: this.started, fetched: 0 });
  }

  pageListed(received: number): void {
    this.listed += received;
  }

  detailsAsked(n: number): void {
    this.toFetch += n;
  }

  detailsDone(n: number): void {
    this.fetched += n;
    const now = this.clock();
    const last = this.samples[this.samples.length - 1];
    if (!last || now - last.at >= SAMPLE_EVERY_MS) this.samples.push({ at: now, fetched: this.fetched });
    while (this.samples.length > 2 && now - (this.samples[1] as { at: number }).at > RATE_WINDOW_MS)
      this.samples.shift();
  }

  setSlices(done: number, total: number): void {
    this.slices = { done: Math.min(done, total), total };
  }

  snapshot(): ProgressSnapshot {
    const now = this.clock();
    const elapsedMs = now - this.started;
    const first = this.samples[0] as { at: number; fetched: number };
    const span = now - first.at;
    const ratePerSecond =
      span >= 1000 && this.fetched > first.fetched ? ((this.fetched - first.fetched) * 1000) / span : null;
    let etaMs: number | null = null;
    const s = this.slices;
    if (s && s.total > 1 && s.done > 0 && s.done < s.total) etaMs = (elapsedMs * (s.total - s.done)) / s.done;
    else if (this.listings === 0 && ratePerSecond !== null)
      etaMs = ((this.toFetch - this.fetched) * 1000) / ratePerSecond;
    else if (this.listings === 0 && this.toFetch === this.fetched) etaMs = 0;
    return {
      what: this.what,
      elapsedMs,
      listed: this.listed,
      toFetch: this.toFetch,
      fetched: this.fetched,
      listing: this.listings > 0,
      slices: s ? { ...s } : null,
      ratePerSecond,
      etaMs: etaMs === null ? null : Math.max(0, Math.round(etaMs)),
    };
  }

  /** The engine's dependencies, counting into this tracker. */
  track(deps: SyncDeps): SyncDeps {
    const remote = deps.details;
    const api = countingClient(deps.api, this, remote === undefined);
    const details = (signal: AbortSignal): DetailSource => {
      const source = remote
        ? remote(signal)
        : new DetailFetcher(api, deps.settings.detailConcurrency, signal, { stragglers: true });
      return {
        fetch: (ids) => {
          this.detailsAsked(ids.length);
          const batch = source.fetch(ids);
          // A detail fetched here is counted as it comes (countingClient); one fetched by another
          // worker, when its batch arrives.
          if (remote) void batch.then((b) => this.detailsDone(b.results.length)).catch(() => undefined);
          return batch;
        },
        close: () => source.close(),
      };
    };
    return { ...deps, api, details };
  }

  /** @internal */
  listingStarted(): void {
    this.listings++;
  }

  /** @internal */
  listingEnded(): void {
    this.listings--;
  }
}

/** The client, with its run listings and (when fetched here) run details counted. */
function countingClient(api: ApiClient, tracker: ProgressTracker, countDetails: boolean): ApiClient {
  const runPages: ApiClient['runPages'] = async function* (...args: Parameters<ApiClient['runPages']>) {
    tracker.listingStarted();
    try {
      for await (const page of api.runPages(...args)) {
        tracker.pageListed((page as ListPage<unknown>).received);
        yield page;
      }
    } finally {
      tracker.listingEnded();
    }
  };
  const getRun: ApiClient['getRun'] = async (...args) => {
    try {
      return await api.getRun(...args);
    } finally {
      tracker.detailsDone(1);
    }
  };
  return new Proxy(api, {
    get(target, prop, receiver) {
      if (prop === 'runPages') return runPages;
      if (prop === 'getRun' && countDetails) return getRun;
      const value = Reflect.get(target, prop, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** "1 h 5 min", "4 min 10 s", "42 s". */
export function formatDuration(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

const n = (x: number) => x.toLocaleString('en-US');

/** One line for a person: what was listed and fetched, at what rate, and what is left. */
export function progressText(p: ProgressSnapshot): string {
  const parts = [`${n(p.listed)} runs listed`, `${n(p.fetched)} of ${n(p.toFetch)} details fetched`];
  if (p.slices && p.slices.total > 1) parts.push(`slice ${n(p.slices.done)} of ${n(p.slices.total)}`);
  parts.push(p.ratePerSecond === null ? 'rate not known yet' : `${p.ratePerSecond.toFixed(1)}/s`);
  parts.push(
    p.etaMs !== null
      ? `about ${formatDuration(p.etaMs)} left`
      : p.listing
        ? 'still listing, end not known yet'
        : 'end not known yet',
  );
  return `${p.what}: ${parts.join(', ')} (${formatDuration(p.elapsedMs)} so far)`;
}

/** A progress line in the logs every `everyMs` while work goes on; returns the function that stops it. */
export function logProgress(tracker: ProgressTracker, logger: Logger, everyMs: number | null): () => void {
  if (everyMs === null) return () => undefined;
  const timer = setInterval(() => {
    const p = tracker.snapshot();
    logger.info(
      {
        progress: p.what,
        listed: p.listed,
        toFetch: p.toFetch,
        fetched: p.fetched,
        ratePerSecond: p.ratePerSecond === null ? null : Math.round(p.ratePerSecond * 10) / 10,
        etaSeconds: p.etaMs === null ? null : Math.round(p.etaMs / 1000),
        ...(p.slices ? { slice: p.slices.done, slices: p.slices.total } : {}),
      },
      progressText(p),
    );
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}

/**
 * For long work with nothing to count (a rebuild from the archive, a full export): a line every
 * `everyMs` saying it goes on, and for how long.
 */
export function sayStillWorking(what: string, say: (line: string) => void, everyMs: number | null): () => void {
  if (everyMs === null) return () => undefined;
  const started = Date.now();
  const timer = setInterval(() => say(`${what}: working, ${formatDuration(Date.now() - started)} so far`), everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
