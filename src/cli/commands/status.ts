import { statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Command } from 'commander';
import { NOTABLE_SKEW_MS } from '../../api/server-clock.ts';
import { memoryBudgetOf } from '../../config/index.ts';
import { completenessText } from '../../sync/completeness-status.ts';
import type { LagStats, StageLags } from '../../sync/freshness.ts';
import { type RollingState, verifiedSince } from '../../sync/rolling-plan.ts';
import { type PassSummary, readStatus, type StatusReport } from '../../sync/status.ts';
import { formatTimestamp, type Micros } from '../../util/timestamp.ts';
import { holderName, WarehouseLockedError } from '../../warehouse/errors.ts';
import { systemMicros, withWarehouse } from '../../warehouse/open.ts';
import { holderText, passHolders } from '../../warehouse/pass-lock.ts';
import { DB_FILE } from '../../warehouse/types.ts';
import { workerSettings } from '../../worker/config.ts';
import { type CliContext, EXIT_FAILED, EXIT_OK } from '../context.ts';
import { quarantineLines, schemaChangeLines } from './schema-lines.ts';
import { rateBudgetLines, withKeyShare } from './status-budget.ts';
import { scheduleLine } from './status-schedule.ts';
import { unreadable, warehouseDirFrom } from './warehouse-dir.ts';

// `runsync status`: what a person on call asks first. Needs only the warehouse directory; the
// file is opened read-only for a moment, and a writer holding it is named rather than waited on.

export function statusCommand(ctx: CliContext, setExit: (code: number) => void): Command {
  return new Command('status')
    .description('freshness, watermarks, row counts, last errors, work in progress')
    .option('--json', 'print the report as JSON')
    .action(async (o: { json?: boolean }) => {
      const dir = warehouseDirFrom(ctx.env);
      const file = join(dir, DB_FILE);
      const queues = await queueLines(ctx.env, dir).catch((e: unknown) => [
        `queues        cannot read them from REDIS_URL: ${(e as Error).message}`,
      ]);
      const problem = unreadable(file);
      if (problem !== null) {
        for (const l of queues) ctx.out(l);
        ctx.err(problem);
        setExit(EXIT_FAILED);
        return;
      }
      let report: StatusReport;
      try {
        const budget = memoryBudgetOf(ctx.env);
        report = await withWarehouse(dir, { readOnly: true, lockWaitMs: 5_000, budget }, async (wh) => {
          const r = await readStatus(wh);
          return { ...r, rateBudget: await withKeyShare(wh, r.rateBudget) };
        });
      } catch (e) {
        if (!(e instanceof WarehouseLockedError)) throw e;
        const analytics = join(dir, 'analytics.duckdb');
        ctx.out(`warehouse     ${file}`);
        ctx.out(`              in use by ${holderName(e.holderPid, e.holder)} for longer than 5 s;`);
        ctx.out(`              a load waiting on it keeps its work and retries. ${analytics} can be read meanwhile.`);
        for (const l of queues) ctx.out(l);
        setExit(EXIT_FAILED);
        return;
      }
      if (o.json) ctx.out(JSON.stringify(jsonReport(file, report), null, 2));
      // The warehouse's times are the API's: read against the API's clock, as the last pass knew it.
      const now = systemMicros() + (report.clockSkewMs ?? 0) * 1000;
      if (!o.json) for (const l of [...statusLines(file, report, now), ...queues]) ctx.out(l);
      setExit(EXIT_OK);
    });
}

/** The report for scripts, its times as ISO 8601 strings with microseconds, as the API writes them. */
export function jsonReport(file: string, r: StatusReport): Record<string, unknown> {
  const t = (v: Micros | null) => (v === null ? null : formatTimestamp(v));
  const times = (o: Record<string, Micros | null>) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, t(v)]));
  const pass = (p: PassSummary | null) => p && { ...p, startedAt: t(p.startedAt), finishedAt: t(p.finishedAt) };
  return {
    warehouse: file,
    ...r,
    watermark: t(r.watermark),
    lastPass: pass(r.lastPass),
    lastFailure: pass(r.lastFailure),
    openRuns: {
      ...r.openRuns,
      oldestCreatedAt: t(r.openRuns.oldestCreatedAt),
      lookedAtSince: t(r.openRuns.lookedAtSince),
    },
    pending: { ...r.pending, oldestFailedAt: t(r.pending.oldestFailedAt) },
    walks: r.walks.map((w) => ({ ...w, from: t(w.from), to: t(w.to), updatedAt: t(w.updatedAt) })),
    freshness: times(r.freshness),
    tableFreshness: times(r.tableFreshness),
    completeness: {
      ...r.completeness,
      oldestVerifiedAt: t(r.completeness.oldestVerifiedAt),
      summary: completenessText(r.completeness, systemMicros() + (r.clockSkewMs ?? 0) * 1000, formatSeconds),
    },
    rolling: r.rolling && {
      position: t(r.rolling.position),
      roundStartedAt: t(r.rolling.roundStartedAt),
      verifiedSince: t(verifiedSince(r.rolling)),
      roundSeconds: r.rolling.roundMicros / 1e6,
      limitedByBudget: r.rolling.limitedByBudget,
      step: r.rolling.step && { from: t(r.rolling.step.from), to: t(r.rolling.step.to) },
    },
  };
}

/** A length of time as people say it: 45 s, 12 min, 3 h, 4 days. */
function formatSeconds(s: number): string {
  if (s < 120) return `${Math.round(s)} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  if (s < 172_800) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86_400)} days`;
}

function ago(at: Micros | null, now: Micros): string {
  if (at === null) return 'never';
  const s = (now - at) / 1e6;
  return `${formatTimestamp(at)} (${s < 0 ? 'ahead of this clock' : `${formatSeconds(s)} ago`})`;
}

function lagLine(what: string, lag: StageLags): string {
  const part = (to: string, l: LagStats) =>
    `${to} p50 ${formatSeconds(l.p50)}, p95 ${formatSeconds(l.p95)}, max ${formatSeconds(l.max)}`;
  const to = [
    lag.warehouse ? part('to the warehouse', lag.warehouse) : null,
    lag.parquet ? part('to Parquet', lag.parquet) : null,
  ];
  const count = `${lag.warehouse?.count ?? 0} ${what}`;
  return `lag           changes of the last hour (${count}): ${to.filter(Boolean).join('; ')}`;
}

function rollingLine(r: RollingState, now: Micros): string {
  const round = formatSeconds(r.roundMicros / 1e6);
  const since = `every run of the horizon looked at since ${ago(verifiedSince(r), now)}`;
  const held = r.limitedByBudget
    ? `; RUNSYNC_RECONCILE_BUDGET holds a round to about ${round}, longer than RUNSYNC_RECONCILE_EVERY`
    : `; a round takes about ${round}`;
  return `reconcile     rolling: ${since}${held}`;
}

/** Whether a pass recorded as running still runs: one holds the warehouse's pass lock. */
function runningNote(dir: string): string {
  const holders = passHolders(dir);
  if (holders.length) return `(running now: ${holders.map(holderText).join('; ')})`;
  return '(not running: it stopped without recording how, killed or its last write refused, e.g. a full disk; the next pass resumes its work)';
}

function passLine(p: PassSummary, now: Micros): string {
  const took = p.finishedAt === null ? 'not finished' : `took ${((p.finishedAt - p.startedAt) / 1e6).toFixed(1)} s`;
  const counts = `${p.requests ?? 0} requests, ${p.rateLimited ?? 0} × 429, ${p.errors.length} error(s)`;
  return `${p.kind} ${p.status}, started ${ago(p.startedAt, now)}, ${took}, ${counts}`;
}

export function statusLines(file: string, r: StatusReport, now: Micros): string[] {
  const size = statSync(file).size;
  const lines = [`warehouse     ${file} (${(size / 1e6).toFixed(1)} MB)`];
  lines.push(`watermark     ${ago(r.watermark, now)}`);
  if (r.clockSkewMs !== null && Math.abs(r.clockSkewMs) >= NOTABLE_SKEW_MS) {
    const by = formatSeconds(Math.abs(r.clockSkewMs) / 1000);
    const way = r.clockSkewMs > 0 ? 'ahead of' : 'behind';
    lines.push(`clock         the API's clock is ${by} ${way} this machine's; windows and times here are the API's`);
  }
  lines.push(`last pass     ${r.lastPass ? passLine(r.lastPass, now) : 'none yet'}`);
  if (r.lastPass?.status === 'running') lines.push(`              ${runningNote(dirname(file))}`);
  if (r.lastFailure) {
    lines.push(`last failure  ${passLine(r.lastFailure, now)}`);
    for (const e of r.lastFailure.errors) lines.push(`              ${e}`);
  }
  const reasons = Object.entries(r.openRuns.byReason)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  const oldest = r.openRuns.oldestCreatedAt;
  const oldestOpen = oldest !== null ? `, oldest created ${ago(oldest, now)}` : '';
  const looked = r.openRuns.lookedAtSince;
  const lookedAt =
    looked !== null ? `; every one looked at in the last ${formatSeconds(Math.max(0, now - looked) / 1e6)}` : '';
  lines.push(`open runs     ${r.openRuns.total} tracked${reasons ? ` (${reasons})` : ''}${oldestOpen}${lookedAt}`);
  if (r.openRuns.deferred > 0)
    lines.push(
      `              ${r.openRuns.deferred} open runs deferred by the last pass, the longest unchecked for ${formatSeconds(r.openRuns.longestUncheckedSeconds)} (more than their share of the key's rate; \`runsync sync --all-open\` checks every one)`,
    );
  if (r.pending.total) {
    const failing = `failing since ${ago(r.pending.oldestFailedAt, now)}: ${r.pending.lastError ?? ''}`;
    lines.push(`stuck         ${r.pending.total} run detail(s) to fetch again, ${failing}`);
  }
  if (r.rejected) lines.push(`refused       ${r.rejected} record(s) kept whole in _sync_rejected`);
  lines.push(...quarantineLines(r.quarantine));
  for (const u of r.unloadable) lines.push(`not loaded    run ${u.id}: ${u.error} (tried again every pass)`);
  lines.push(...schemaChangeLines(r.schemaChanges));
  if (r.rolling) lines.push(rollingLine(r.rolling, now));
  lines.push(`completeness  ${completenessText(r.completeness, now, formatSeconds)}`);
  if (r.lag.warehouse) lines.push(lagLine('runs', r.lag));
  if (r.lag.catalog.warehouse) lines.push(lagLine('catalog objects', r.lag.catalog));
  lines.push(...rateBudgetLines(r.rateBudget));
  for (const w of r.walks) {
    if (w.key === 'runs.live' && w.done) continue;
    const what =
      w.key === 'runs.live'
        ? 'live window'
        : w.key === 'runs.reconcile'
          ? 'reconciliation'
          : `backfill ${w.key.slice('backfill.'.length)}`;
    const state = (w.done ? 'done' : 'in progress').padEnd(14);
    const span = `${formatTimestamp(w.from)} → ${formatTimestamp(w.to)}`;
    const slice = w.done
      ? `${w.slices} of ${w.slices} slices`
      : `slice ${Math.min(w.slice + 1, w.slices)} of ${w.slices}`;
    const progress = `${slice}, ${w.listed} listed, ${w.fetched} fetched`;
    lines.push(`${state}${what} ${span}: ${progress}, updated ${ago(w.updatedAt, now)}`);
  }
  const newest = ago(r.freshness.newestRunUpdatedAt, now);
  lines.push(`freshness     newest run change ${newest}; last detail fetched ${ago(r.freshness.lastFetchedAt, now)}`);
  for (const [t, at] of Object.entries(r.tableFreshness))
    lines.push(`  ${t.padEnd(18)}up to date as of ${ago(at, now)}`);
  const stale = r.walks.filter((w) => !w.done && now - w.updatedAt > 3600e6);
  for (const w of stale) lines.push(`stuck         ${w.key} has not moved since ${ago(w.updatedAt, now)}`);
  const parquet = r.exportPending
    ? `${r.exportPending} partition(s) or table(s) changed since the last export`
    : 'up to date with the tables';
  lines.push(`parquet       ${parquet}`);
  lines.push(
    `rows          ${Object.entries(r.tables)
      .map(([t, c]) => `${t} ${c}`)
      .join(', ')}`,
  );
  return lines;
}

/** Queue depths, schedules, queued backfills and a blocked writer, when REDIS_URL is set. */
async function queueLines(env: NodeJS.ProcessEnv, dir: string): Promise<string[]> {
  const url = env.REDIS_URL?.trim();
  if (!url) return [];
  const settings = workerSettings(env, dir);
  // Loaded only with REDIS_URL set: the queue's client is slow to load, and most warehouses have none.
  const { openQueueClient, queueReport } = await import('../../worker/client.ts');
  const { listBackfills } = await import('../../worker/backfill-flow.ts');
  const client = openQueueClient(url, settings.prefix);
  try {
    const q = await Promise.race([
      queueReport(client),
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error('no answer within 5 s')), 5_000).unref()),
    ]);
    const depth = (c: Record<string, number>) =>
      Object.entries(c)
        .filter(([, v]) => v > 0)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ') || 'empty';
    const lines = [`queues        write: ${depth(q.write)}; fetch: ${depth(q.fetch)}`];
    for (const s of q.schedules) lines.push(scheduleLine(s, q.workers, Date.now()));
    if (q.blocked) {
      const who = holderName(q.blocked.holderPid, q.blocked.holder);
      const waited = Math.round((Date.now() - q.blocked.since) / 1000);
      lines.push(
        `blocked       a load (${q.blocked.waiting}) has waited ${waited} s for the warehouse, held by ${who}`,
      );
    }
    for (const b of await listBackfills(client.write, 5)) {
      const why = b.failedReason ? ` (${b.failedReason})` : '';
      lines.push(`queued        backfill ${b.key}: ${b.state}, ${b.done}/${b.total} slices${why}`);
    }
    return lines;
  } finally {
    await client.close();
  }
}
