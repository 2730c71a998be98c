import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { loadConfig } from '../src/config/index.ts';
import { type Change, type ChangeKind, catalogChanges, runChanges } from '../src/simulator/changes.ts';
import { startSimulator } from '../src/simulator/index.ts';
import type { SimWorld } from '../src/simulator/world.ts';
import { createEngine, runPass } from '../src/sync/index.ts';
import { silentLogger } from '../src/util/logger.ts';
import { MICROS_PER_MINUTE, MICROS_PER_SECOND, type Micros, parseTimestamp } from '../src/util/timestamp.ts';
import { quoteLiteral, sqlRunner } from '../src/warehouse/sql.ts';
import { CATALOG_EVERY_MINUTES, CONTINUOUS_EVERY_MS } from '../src/worker/config.ts';
import type { Bench, BenchRow } from './bench-types.ts';
import { startDateOf, type WorldSpec, worldWarehouse } from './world-warehouse.ts';

/** What the bench measures and how, for docs/performance.md (`npm run bench` writes it). */
export const method = `Freshness under a real rate limit (R = 50 requests/s, a fixed window), with passes back to back as
\`RUNSYNC_SCHEDULE_RUNS=continuous\` runs them (one every 5 s, or as soon as the last one ends) and
the catalog snapshotted on the worker's default schedule, for the same stream of new runs (about 23
a minute) with 10,000 and with 1,000,000 runs in the open-run horizon (\`BENCH_FRESHNESS_SIZES\`;
\`BENCH_FRESHNESS_WARMUP\` sets the minutes of passes before the measured ones). The simulator's clock
moves with the wall clock. Every change the API shows during the measured minutes is timed from
when it was shown to the export that put it in Parquet (the files each pass wrote are read back); a
change not there at the end counts at its wait so far. With 10,000 runs the reconciliation interval
is 10 minutes, so whole rounds are seen; with 1,000,000 it is the default hour, longer than the run,
and the largest lag a settled run can wait is the round's length, read from how far the round got.`;

const R = 50;
const RUNS_PER_DAY = 33_333;
const NOW = parseTimestamp('2026-03-01T00:00:00Z') as Micros;
const CATALOG = { tools: 3000, agents: 200, guidelines: 1500, guardrails: 500, runbooks: 1000 };

interface Case {
  size: number;
  every: string;
  minutes: number;
  /** Minutes of passes before the measured ones, for what the looks learn (BENCH_FRESHNESS_WARMUP). */
  warmup: number;
}

const quantile = (xs: number[], q: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))] ?? Number.NaN;

/**
 * The open runs whose changes waited over a minute, by why they were open and how long they had
 * been quiet when they changed: which runs the look schedule left waiting.
 */
function lateByKind(world: SimWorld, late: readonly Change[]): string {
  const tally = new Map<string, number>();
  for (const x of late) {
    const index = world.runs.indexOfId(x.id);
    if (index === null) continue;
    const plan = world.runs.plan(index, false);
    const before = world.runs.versionAt(plan, (x.shownAt - 1) as Micros);
    if (!before) continue;
    const kind = [
      before.status ?? 'none',
      before.waiting ? 'approval' : '',
      before.scheduledResumeAt !== null ? 'scheduled' : '',
      before.resolution?.type === 'pending' ? 'pending' : '',
    ]
      .filter(Boolean)
      .join('+');
    const quiet = (x.shownAt - before.at) / MICROS_PER_SECOND;
    const span = quiet < 3600 ? 'under 1 h' : quiet < 86_400 ? '1 h to 1 d' : quiet < 7 * 86_400 ? '1-7 d' : 'over 7 d';
    const key = `${kind} quiet ${span}`;
    tally.set(key, (tally.get(key) ?? 0) + 1);
  }
  return [...tally]
    .sort((a, b) => b[1] - a[1])
    .map(([k, n]) => `${k}: ${n}`)
    .join(', ');
}

/** updated_at of the pending objects found in the files a pass wrote; null for one a catalog file lacks. */
async function found(dir: string, files: readonly string[], pending: ReadonlyMap<string, Change[]>) {
  const out = new Map<string, Micros | null>();
  const instance = await DuckDBInstance.create(':memory:');
  try {
    const db = sqlRunner(await instance.connect());
    for (const f of files) {
      const table = f.split('/')[1] as string;
      if (!['runs', 'tools', 'agents', 'guidelines', 'guardrails', 'runbooks'].includes(table)) continue;
      const rows = await db.all<{ id: string; u: bigint }>(
        `SELECT id, epoch_us(updated_at) AS u FROM read_parquet(${quoteLiteral(join(dir, f))})`,
      );
      const seen = new Set<string>();
      for (const r of rows) {
        seen.add(r.id);
        if (pending.has(`${table}/${r.id}`)) out.set(`${table}/${r.id}`, Number(r.u));
      }
      // A catalog table is one file: what it lacks was removed.
      if (table !== 'runs') {
        for (const [k, [c]] of pending) if (c?.table === table && !seen.has(c.id)) out.set(k, null);
      }
    }
  } finally {
    instance.closeSync();
  }
  return out;
}

async function measure(c: Case, scale: number, log: (l: string) => void): Promise<BenchRow[]> {
  const size = Math.round(c.size * scale);
  const world: WorldSpec = { seed: 83, size, days: size / RUNS_PER_DAY, now: NOW };
  const root = mkdtempSync(join(tmpdir(), 'runsync-bench-fresh-'));
  const dir = join(root, 'w');
  await worldWarehouse(world, dir, log);
  const sim = await startSimulator({
    port: 0,
    seed: world.seed,
    size,
    days: world.days,
    now: NOW,
    clock: 'wall',
    rateLimit: { perKey: { limit: R, windowSeconds: 1 } },
    // A large catalog, so that some of it is edited in the minutes measured (a default one sees a
    // few edits a day); the catch-up pass loads it.
    catalog: CATALOG,
  });
  const config = loadConfig({
    RUNSYNC_API_URL: sim.url,
    RUNSYNC_API_KEY: sim.key,
    RUNSYNC_WAREHOUSE_DIR: dir,
    RUNSYNC_START_DATE: startDateOf(world),
    RUNSYNC_RECONCILE_EVERY: c.every,
  });
  const engine = createEngine(config, {
    logger: silentLogger(),
    signal: new AbortController().signal,
    now: () => sim.clock.now(),
  });
  const label = `${(size / 1000).toLocaleString('en-US')}k runs in the horizon`;
  try {
    let passStartedAt = Number.NEGATIVE_INFINITY;
    let catalogAt = 0;
    const pass = async () => {
      // The worker queues a continuous pass every CONTINUOUS_EVERY_MS, or as soon as the last one ends.
      const wait = passStartedAt + CONTINUOUS_EVERY_MS - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      passStartedAt = performance.now();
      const catalog = sim.clock.now() - catalogAt >= CATALOG_EVERY_MINUTES * MICROS_PER_MINUTE;
      if (catalog) catalogAt = sim.clock.now();
      return runPass(engine.deps, { catalog });
    };
    // A pass to catch up with what changed while the warehouse was copied, the warm-up, then the
    // measured run. A deployment runs for days: the warm-up stands for what its looks have learned
    // of which open runs change (open-hazard.ts), which a fresh warehouse starts without. At a
    // million runs it outlasts RECHECK_SLOW, so every open run has been watched for a while.
    await runPass(engine.deps);
    const warm = sim.clock.now() + c.warmup * MICROS_PER_MINUTE;
    let warmPasses = 0;
    while (sim.clock.now() < warm) {
      await pass();
      warmPasses++;
    }
    if (c.warmup > 0) log(`${label}: ${warmPasses} passes of warm-up in ${c.warmup} min`);
    const start = sim.clock.now();
    const end = start + Math.max(2, c.minutes * scale) * MICROS_PER_MINUTE;
    const changes = [...runChanges(sim.world, start, end), ...catalogChanges(sim.world, start, end)];
    const pending = new Map<string, Change[]>();
    for (const x of changes) pending.set(`${x.table}/${x.id}`, [...(pending.get(`${x.table}/${x.id}`) ?? []), x]);
    const lags = new Map<ChangeKind, number[]>();
    /** The changes that reached Parquet over a minute after they were shown. */
    const slow = new Map<ChangeKind, Change[]>();
    let written = 0;
    let changedRuns = 0;
    let passes = 0;
    const pages = { live: 0, open: 0, reconcile: 0 };
    let openChecked = 0;
    const passSeconds: number[] = [];
    sim.counters.reset();
    const t0 = sim.clock.now();
    while (sim.clock.now() < end) {
      const r = await pass();
      passSeconds.push((performance.now() - passStartedAt) / 1000);
      const now = sim.clock.now();
      passes++;
      changedRuns += r.runs.fetched;
      for (const k of ['live', 'open', 'reconcile'] as const) pages[k] += r.listPages[k];
      openChecked += r.openRunsChecked;
      const files = r.export?.written ?? [];
      written += files.reduce((n, f) => n + statSync(join(dir, f)).size, 0);
      for (const [k, u] of await found(dir, files, pending)) {
        const left = (pending.get(k) ?? []).filter((x) => {
          const there = x.updatedAt === null ? u === null : u !== null && u >= x.updatedAt;
          if (x.shownAt > now || !there) return true;
          const lag = (now - x.shownAt) / MICROS_PER_SECOND;
          lags.set(x.kind, [...(lags.get(x.kind) ?? []), lag]);
          if (lag > 60) slow.set(x.kind, [...(slow.get(x.kind) ?? []), x]);
          return false;
        });
        if (left.length) pending.set(k, left);
        else pending.delete(k);
      }
    }
    const elapsed = (sim.clock.now() - t0) / MICROS_PER_SECOND;
    const share = sim.counters.count() / (R * elapsed);
    const state = await engine.deps.gate.use((wh) =>
      wh.all<{ v: string }>(`SELECT value::VARCHAR AS v FROM _sync_state WHERE key = 'runs.rolling'`),
    );
    const rolling = JSON.parse(state[0]?.v ?? '{}') as { roundMicros?: number; limitedByBudget?: boolean };
    const bytesPerRun = await parquetBytesPerRun(dir);
    const rows: BenchRow[] = [];
    const row = (metric: string, value: number, unit: string, goal: string, note = '') =>
      rows.push({ bench: 'freshness', metric: `${label}: ${metric}`, value, unit, goal, note });
    const stop = sim.clock.now();
    for (const kind of ['new run', 'open run'] as const) {
      const l = lags.get(kind) ?? [];
      // A change not in Parquet yet has waited at least this long: counted so, the p95 cannot
      // leave out the slowest.
      const unfound = [...pending.values()].flat().filter((x) => x.kind === kind && x.shownAt <= stop);
      const waited = (x: Change) => (stop - x.shownAt) / MICROS_PER_SECOND;
      const still = unfound.map(waited);
      const all = [...l, ...still];
      const stillLate = unfound.filter((x) => waited(x) > 60);
      const late = stillLate.length;
      const lateOnes = [...(slow.get(kind) ?? []), ...stillLate];
      const figures =
        `p50 ${quantile(all, 0.5).toFixed(0)} s, max ${Math.max(0, ...l).toFixed(0)} s` +
        (kind === 'open run' && lateOnes.length ? `; over 60 s: ${lateByKind(sim.world, lateOnes)}` : '');
      row(
        `${kind}s, p95 lag to Parquet`,
        quantile(all, 0.95),
        's',
        '<= 60',
        `${l.length} in Parquet and ${still.length} not yet (${late} of them shown over 60 s before the end, ` +
          'counted at their wait so far); ' +
          figures,
      );
    }
    const settled = lags.get('settled run') ?? [];
    const waiting = [...pending.values()].flat().filter((x) => x.kind === 'settled run');
    row(
      'settled runs, max lag to Parquet',
      Math.max(0, ...settled),
      's',
      '<= 3600',
      `${settled.length} caught, ${waiting.length} still to come in the round; RUNSYNC_RECONCILE_EVERY ${c.every}`,
    );
    row(
      'reconciliation round',
      (rolling.roundMicros ?? Number.NaN) / MICROS_PER_SECOND,
      's',
      '<= 3600',
      `the longest a settled run waits${rolling.limitedByBudget ? ', held by RUNSYNC_RECONCILE_BUDGET' : ''}`,
    );
    const cat = lags.get('catalog') ?? [];
    row('catalog, max lag to Parquet', Math.max(0, ...cat), 's', '<= 300', `${cat.length} changes`);
    row(
      'budget used in steady state',
      share * 100,
      '%',
      '<= 15',
      `${sim.counters.count()} requests in ${elapsed.toFixed(0)} s`,
    );
    const pct = (n: number) => `${((n / (R * elapsed)) * 100).toFixed(1)}%`;
    const runRequests = sim.counters.count('runs.list') + sim.counters.count('runs.get');
    row(
      'budget used in steady state, by purpose',
      share * 100,
      '%',
      '',
      `live window ${pct(pages.live)}, open runs ${pct(pages.open)} (${openChecked} looks, ` +
        `${(openChecked / Math.max(1, pages.open)).toFixed(0)} a request), reconciliation ${pct(pages.reconcile)}, ` +
        `run details ${pct(sim.counters.count('runs.get'))}, catalog ${pct(sim.counters.count() - runRequests)}, ` +
        `other run lists ${pct(sim.counters.count('runs.list') - pages.live - pages.open - pages.reconcile)}`,
    );
    row(
      'Parquet bytes written per pass / bytes of the runs that changed',
      written / Math.max(1, changedRuns * bytesPerRun),
      '',
      '',
      `${passes} passes (p50 ${quantile(passSeconds, 0.5).toFixed(1)} s, p95 ${quantile(passSeconds, 0.95).toFixed(1)} s, ` +
        `max ${Math.max(...passSeconds).toFixed(1)} s), ${(written / passes / 1e6).toFixed(2)} MB a pass, ${changedRuns} runs changed, ` +
        `${bytesPerRun.toFixed(0)} B a run`,
    );
    log(rows.map((r) => `${r.metric}: ${r.value} ${r.note}`).join('\n   '));
    return rows;
  } finally {
    await engine.close();
    await sim.close();
    rmSync(root, { recursive: true, force: true });
  }
}

/** Parquet bytes of the run tables per run: what one changed run's rows weigh. */
async function parquetBytesPerRun(dir: string): Promise<number> {
  const instance = await DuckDBInstance.create(':memory:');
  try {
    const db = sqlRunner(await instance.connect());
    const tree = join(dir, 'parquet');
    const files = quoteLiteral(`${tree}/run*/*/*.parquet`);
    const [r] = await db.all<{ b: bigint }>(
      `SELECT sum(total_compressed_size)::BIGINT AS b FROM parquet_metadata(${files})`,
    );
    const [n] = await db.all<{ n: bigint }>(
      `SELECT count(*) AS n FROM read_parquet(${quoteLiteral(`${tree}/runs/*/*.parquet`)})`,
    );
    return Number(r?.b ?? 0) / Math.max(1, Number(n?.n ?? 1));
  } finally {
    instance.closeSync();
  }
}

const bench: Bench = async (ctx) => {
  const cases: Case[] = [
    { size: 10_000, every: '10m', minutes: 12, warmup: 0 },
    { size: 1_000_000, every: '1h', minutes: 10, warmup: 35 },
  ];
  const warmup = process.env.BENCH_FRESHNESS_WARMUP;
  const only = process.env.BENCH_FRESHNESS_SIZES?.split(',').map(Number);
  const rows: BenchRow[] = [];
  for (const c of cases.filter((x) => !only || only.includes(x.size)))
    rows.push(...(await measure(warmup ? { ...c, warmup: Number(warmup) } : c, ctx.scale, ctx.log)));
  return rows;
};

export default bench;
