import type { Redis } from 'ioredis';
import { Counter, Gauge, Registry } from 'prom-client';
import type { ApiClient } from '../api/index.ts';
import type { BucketView, BudgetUse } from '../budget/index.ts';
import type { FreshnessSummary } from '../sync/freshness.ts';
import { lastHourLags } from '../sync/status.ts';
import type { WorkerQueues } from './job-context.ts';

// Prometheus metrics of one worker process (scrape every worker; sum across them): passes by kind
// and status, runs and child rows loaded, API requests by status, 429s, queue depths, and the lag
// of the warehouse behind the API (from the writer's last pass, kept in Redis so any worker can
// report it). A registry of its own: nothing global.

export const PASS_KEY = 'last-pass';
/** Lags of recent passes and snapshots, newest first, for the last hour's figures. */
export const FRESHNESS_KEY = 'freshness';
const FRESHNESS_KEPT = 500;
const HOUR_MS = 3_600_000;

/**
 * A gauge with no value yet (no pass has finished) reads NaN: 0 would read as fresh. Alert on it
 * with `runsync_lag_seconds > 900 or runsync_lag_seconds != runsync_lag_seconds`.
 */
const UNKNOWN = Number.NaN;

export interface LastPass {
  kind: string;
  status: string;
  finishedAtMs: number;
  watermarkMs: number | null;
  openRuns: number | null;
  /** Lag of the pass's changes to the warehouse and to Parquet (absent: nothing measured). */
  freshness?: FreshnessSummary | null;
  /** What the rate budget had learned by the pass's end, and how much of the key's rate it used. */
  rateBudget?: BudgetUse | null;
  /** Every run of the open-run horizon was looked at since this time (Unix ms; null: not yet). */
  horizonVerifiedSinceMs?: number | null;
}

interface KeptLags {
  atMs: number;
  freshness: FreshnessSummary;
}

/** Keeps what a pass or snapshot measured, for every worker's /metrics (a short list in Redis). */
export async function keepFreshness(redis: Redis, prefix: string, freshness: FreshnessSummary | null): Promise<void> {
  if (!freshness) return;
  const key = `${prefix}:${FRESHNESS_KEY}`;
  const kept: KeptLags = { atMs: Date.now(), freshness };
  await redis
    .multi()
    .lpush(key, JSON.stringify(kept))
    .ltrim(key, 0, FRESHNESS_KEPT - 1)
    .exec();
}

export interface WorkerMetrics {
  registry: Registry;
  /** A write job finished with this result. */
  recordJob(name: string, result: unknown): void;
}

interface MetricsSources {
  queues: WorkerQueues;
  redis: Redis;
  prefix: string;
  api: ApiClient;
}

/** The last runs pass as the writer kept it in Redis; null before the first. */
type LastPassReader = () => Promise<LastPass | null>;

export function createMetrics(o: MetricsSources): WorkerMetrics {
  const registry = new Registry();
  const jobs = jobCounters(registry);
  apiCounters(registry, o.api);
  queueGauge(registry, o.queues);
  const lastPass = async (): Promise<LastPass | null> => {
    const raw = await o.redis.get(`${o.prefix}:${PASS_KEY}`);
    return raw ? (JSON.parse(raw) as LastPass) : null;
  };
  freshnessGauges(registry, o, lastPass);
  budgetGauges(registry, lastPass);
  new Gauge({
    name: 'runsync_open_runs',
    help: 'Runs still in progress that passes keep checking',
    registers: [registry],
    async collect() {
      const p = await lastPass();
      this.set(p?.openRuns !== null && p?.openRuns !== undefined ? p.openRuns : UNKNOWN);
    },
  });
  return {
    registry,
    recordJob(name, result) {
      const r = result as {
        status?: string;
        kind?: string;
        runs?: { inserted?: number; updated?: number; childRows?: number };
      } | null;
      if (!r || typeof r !== 'object') return;
      if (typeof r.status === 'string') jobs.passes.inc({ kind: r.kind ?? name, status: r.status });
      if (r.runs) {
        jobs.runs.inc((r.runs.inserted ?? 0) + (r.runs.updated ?? 0));
        jobs.childRows.inc(r.runs.childRows ?? 0);
      }
    },
  };
}

/** What this worker's write jobs did, counted as each finishes (recordJob). */
function jobCounters(registry: Registry) {
  const passes = new Counter({
    name: 'runsync_passes_total',
    help: 'Passes run by this worker, by kind and status',
    labelNames: ['kind', 'status'],
    registers: [registry],
  });
  const runs = new Counter({
    name: 'runsync_runs_loaded_total',
    help: 'Run details loaded (inserted or updated) by this worker',
    registers: [registry],
  });
  const childRows = new Counter({
    name: 'runsync_child_rows_loaded_total',
    help: 'Messages, steps and evaluations written by this worker',
    registers: [registry],
  });
  return { passes, runs, childRows };
}

/** The API client's own totals, moved on by what they grew since the last scrape. */
function apiCounters(registry: Registry, api: ApiClient): void {
  let seen: Record<string, number> = {};
  new Counter({
    name: 'runsync_api_requests_total',
    help: 'Export API requests sent by this worker, by HTTP status (0: no response)',
    labelNames: ['status'],
    registers: [registry],
    collect() {
      const now = api.stats().byStatus;
      for (const [status, n] of Object.entries(now)) {
        const d = n - (seen[status] ?? 0);
        if (d > 0) this.inc({ status }, d);
      }
      seen = { ...now };
    },
  });
  let limitedSeen = 0;
  new Counter({
    name: 'runsync_api_rate_limited_total',
    help: 'Export API responses 429 seen by this worker',
    registers: [registry],
    collect() {
      const n = api.stats().rateLimited;
      if (n > limitedSeen) this.inc(n - limitedSeen);
      limitedSeen = n;
    },
  });
}

function queueGauge(registry: Registry, queues: WorkerQueues): void {
  new Gauge({
    name: 'runsync_queue_jobs',
    help: 'Jobs in the queues, by queue and state',
    labelNames: ['queue', 'state'],
    registers: [registry],
    async collect() {
      for (const q of [queues.write, queues.fetch]) {
        const counts = await q.getJobCounts(
          'waiting',
          'active',
          'delayed',
          'failed',
          'waiting-children',
          'prioritized',
        );
        for (const [state, n] of Object.entries(counts)) this.set({ queue: q.name, state }, n);
      }
    },
  });
}

/** How far behind the API the warehouse is: from the last pass, and the lags of the last hour. */
function freshnessGauges(registry: Registry, o: MetricsSources, lastPass: LastPassReader): void {
  new Gauge({
    name: 'runsync_lag_seconds',
    help: "How far the warehouse is behind the API: now minus the live window's watermark",
    registers: [registry],
    async collect() {
      const p = await lastPass();
      this.set(p?.watermarkMs ? (Date.now() - p.watermarkMs) / 1000 : UNKNOWN);
    },
  });
  new Gauge({
    name: 'runsync_last_pass_timestamp_seconds',
    help: 'When the last runs pass finished (Unix time)',
    registers: [registry],
    async collect() {
      const p = await lastPass();
      this.set(p ? p.finishedAtMs / 1000 : UNKNOWN);
    },
  });
  new Gauge({
    name: 'runsync_change_lag_seconds',
    help: "Seconds from a change (a run's or a catalog object's updated_at) to the warehouse or to Parquet, last hour",
    labelNames: ['resource', 'stage', 'quantile'],
    registers: [registry],
    async collect() {
      const raw = await o.redis.lrange(`${o.prefix}:${FRESHNESS_KEY}`, 0, -1);
      const since = Date.now() - HOUR_MS;
      const recent = raw.map((r) => JSON.parse(r) as KeptLags).filter((k) => k.atMs >= since);
      const lag = lastHourLags(recent.map((k) => k.freshness));
      for (const [resource, stages] of [
        ['runs', lag],
        ['catalog', lag.catalog],
      ] as const) {
        for (const stage of ['warehouse', 'parquet'] as const) {
          const l = stages[stage];
          this.set({ resource, stage, quantile: '0.5' }, l ? l.p50 : UNKNOWN);
          this.set({ resource, stage, quantile: '0.95' }, l ? l.p95 : UNKNOWN);
          this.set({ resource, stage, quantile: '1' }, l ? l.max : UNKNOWN);
        }
      }
    },
  });
  new Gauge({
    name: 'runsync_horizon_verified_timestamp_seconds',
    help: 'Every run of the open-run horizon has been looked at since this time (Unix time; rolling reconciliation)',
    registers: [registry],
    async collect() {
      const since = (await lastPass())?.horizonVerifiedSinceMs;
      this.set(typeof since === 'number' ? since / 1000 : UNKNOWN);
    },
  });
}

/** Per bucket, what the rate budget believed at the last pass's end (docs/rate-budget.md's words). */
const BUCKET_GAUGES: [name: string, help: string, value: (b: BucketView) => number][] = [
  ['burst', "Each bucket's burst (X-RateLimit-Limit): requests it lets through at once when full", (b) => b.burst],
  [
    'window_seconds',
    'How long each bucket takes to give its burst back, as its Reset figures prove',
    (b) => b.windowSeconds,
  ],
  ['sustained_per_second', "Each bucket's sustained rate: its burst per window", (b) => b.sustainedPerSecond],
  [
    'others_per_second',
    'Requests per second others take from each bucket, as its Remaining figures show',
    (b) => b.othersPerSecond,
  ],
  [
    'pace_per_second',
    'Requests per second the budget paces requests drawing on each bucket to',
    (b) => b.pacePerSecond,
  ],
];

/** What the rate budget believed by the last pass's end, and how much of the key's rate it used. */
function budgetGauges(registry: Registry, lastPass: LastPassReader): void {
  for (const [name, help, value] of BUCKET_GAUGES) {
    new Gauge({
      name: `runsync_rate_budget_${name}`,
      help: `${help} (scope: key, or an endpoint of its own)`,
      labelNames: ['scope'],
      registers: [registry],
      async collect() {
        this.reset();
        for (const b of (await lastPass())?.rateBudget?.buckets ?? []) this.set({ scope: b.scope }, value(b));
      },
    });
  }
  new Gauge({
    name: 'runsync_rate_budget_used_ratio',
    help: "The last runs pass's requests as a share of what the key allowed over the pass (its burst and rate)",
    registers: [registry],
    async collect() {
      this.set((await lastPass())?.rateBudget?.usedShare ?? UNKNOWN);
    },
  });
}
