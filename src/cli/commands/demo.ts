import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { Command } from 'commander';
import { configuredLogger, loadConfig, memoryBudgetOf, prepareWarehouseDir, shareGroup } from '../../config/index.ts';
import { startSimulator } from '../../simulator/index.ts';
import { createEngine, type PassResult, runPass } from '../../sync/index.ts';
import { logProgress, ProgressTracker } from '../../sync/progress.ts';
import { STATUS_TABLES } from '../../sync/status.ts';
import type { MemoryBudget } from '../../util/memory-budget.ts';
import { formatTimestamp, MICROS_PER_DAY, MICROS_PER_HOUR, MICROS_PER_SECOND } from '../../util/timestamp.ts';
import { getState, setState, systemMicros, type Warehouse, withWarehouse } from '../../warehouse/index.ts';
import { ANALYTICS_FILE, DB_FILE } from '../../warehouse/types.ts';
import { type CliContext, EXIT_OK, UsageError } from '../context.ts';
import { formatTable } from '../table-format.ts';
import { terminalFor } from './engine-context.ts';
import { warehouseDirFrom } from './warehouse-dir.ts';

// `runsync demo`: the bundled simulator, a full pass into ./warehouse, an hour later an incremental
// one, then what landed and three questions answered from it. Needs nothing but `npm install`.
// A warehouse a previous demo made is replaced; any other warehouse is left alone.

const SEED = 42;
const SIZE = 2000;
const DAYS = 30;
const DEMO_KEY = 'demo';

export const DEMO_QUERIES: { title: string; sql: string }[] = [
  {
    title: 'Runs per day by resolution (last 7 days)',
    sql: `SELECT CAST(created_date AS VARCHAR) AS day, count(*) AS runs,
  count(*) FILTER (WHERE resolution_type = 'deflected') AS deflected,
  count(*) FILTER (WHERE resolution_type = 'resolved') AS resolved,
  count(*) FILTER (WHERE resolution_type = 'escalated') AS escalated,
  count(*) FILTER (WHERE resolution_type = 'pending' OR resolution_type IS NULL) AS pending_or_none
FROM runs GROUP BY created_date ORDER BY created_date DESC LIMIT 7`,
  },
  {
    title: 'Most called tools: volume, error rate, median duration',
    sql: `SELECT tool_name, count(*) AS calls,
  CAST(round(100.0 * count(nullif(tool_error, '')) / count(*), 1) AS DOUBLE) AS error_pct,
  CAST(round(median(duration_seconds), 2) AS DOUBLE) AS median_s
FROM run_tool_calls GROUP BY tool_name ORDER BY calls DESC LIMIT 5`,
  },
  {
    title: 'Deflection and escalation rate per agent',
    sql: `SELECT coalesce(agent_name, '(no agent)') AS agent, count(*) AS runs,
  CAST(round(100.0 * count(*) FILTER (WHERE resolution_type = 'deflected') / count(*), 1) AS DOUBLE) AS deflected_pct,
  CAST(round(100.0 * count(*) FILTER (WHERE resolution_type = 'escalated') / count(*), 1) AS DOUBLE) AS escalated_pct
FROM runs GROUP BY 1 ORDER BY runs DESC LIMIT 5`,
  },
];

/** Clears a warehouse directory a previous demo filled; refuses one that holds anything else. */
async function clearPreviousDemo(dir: string, budget: MemoryBudget): Promise<void> {
  if (!existsSync(join(dir, DB_FILE))) return;
  const isDemo = await withWarehouse(
    dir,
    { readOnly: true, lockWaitMs: 5_000, budget },
    async (wh) => (await getState(wh, DEMO_KEY)) !== undefined,
  ).catch((e: unknown) => {
    throw new UsageError(`cannot use ${dir} for the demo: ${(e as Error).message}`);
  });
  if (!isDemo) {
    throw new UsageError(
      `${join(dir, DB_FILE)} holds a warehouse that is not a demo's; ` +
        'set RUNSYNC_WAREHOUSE_DIR to another directory to run the demo',
    );
  }
  for (const name of [DB_FILE, `${DB_FILE}.wal`, ANALYTICS_FILE, `${ANALYTICS_FILE}.wal`, 'raw', 'parquet']) {
    await rm(join(dir, name), { recursive: true, force: true });
  }
}

function passLine(label: string, r: PassResult): string {
  const c = r.runs;
  const runs = `${c.listed} runs listed, ${c.new} new, ${c.changed} changed`;
  const details = `${c.fetched} details loaded (${c.childRows} child rows), ${r.openRunsTracked} runs still open`;
  return `${label}: ${runs}, ${details}; ${r.requests.requests} requests in ${(r.durationMs / 1000).toFixed(1)} s`;
}

async function summary(wh: Warehouse): Promise<string[]> {
  const lines: string[] = [];
  const counts: Record<string, unknown>[] = [];
  for (const t of STATUS_TABLES) {
    const [r] = await wh.all<{ c: bigint }>(`SELECT count(*) AS c FROM ${t}`);
    counts.push({ table: t, rows: Number(r?.c ?? 0) });
  }
  lines.push('', 'What landed', ...formatTable(counts).map((l) => `  ${l}`));
  for (const q of DEMO_QUERIES) {
    lines.push('', q.title, ...q.sql.split('\n').map((l) => `  ${l}`), '');
    lines.push(...formatTable(await wh.all(q.sql)).map((l) => `  ${l}`));
  }
  return lines;
}

/**
 * What to try next: commands that work at once on what the demo left, with nothing else
 * installed (no DuckDB client is needed: `runsync query` is one).
 */
export function nextSteps(rel: string): string[] {
  const run = `${rel === 'warehouse' ? '' : `RUNSYNC_WAREHOUSE_DIR=${rel} `}npx runsync`;
  const steps: [string, string][] = [
    [`${run} query "SELECT * FROM v_runs_daily_resolution ORDER BY day DESC LIMIT 7"`, 'any SQL, read-only'],
    [`${run} report`, `charts of the main views in ${join(rel, 'report.html')}`],
    [`${run} status`, 'what landed, how fresh, what is stuck'],
    [
      `${run} query --analytics "SELECT count(*) AS runs FROM runs"`,
      `views over ${join(rel, 'parquet')}/, readable while a sync writes`,
    ],
  ];
  const width = Math.max(...steps.map(([c]) => c.length));
  return ['', 'Next:', ...steps.map(([c, what]) => `  ${c.padEnd(width)}   # ${what}`)];
}

export function demoCommand(ctx: CliContext, setExit: (code: number) => void): Command {
  return new Command('demo')
    .description(
      'start the bundled simulator, sync it into ./warehouse (RUNSYNC_WAREHOUSE_DIR), ' +
        'print what landed and example queries',
    )
    .action(async () => {
      const dir = warehouseDirFrom(ctx.env);
      prepareWarehouseDir(dir, shareGroup(ctx.env));
      await clearPreviousDemo(dir, memoryBudgetOf(ctx.env));
      // The simulated hour between the two passes ends now, so what the demo leaves is as of now.
      const now = Math.floor(systemMicros() / MICROS_PER_SECOND) * MICROS_PER_SECOND - MICROS_PER_HOUR;
      const sim = await startSimulator({
        port: 0,
        seed: SEED,
        size: SIZE,
        days: DAYS,
        now,
        clock: 'manual',
        rateLimit: { perKey: null },
      });
      try {
        ctx.out(`simulator: ${SIZE} runs over ${DAYS} days at ${sim.url} (seed ${SEED}); warehouse: ${dir}`);
        const config = loadConfig({
          RUNSYNC_API_URL: sim.url,
          RUNSYNC_API_KEY: sim.key,
          RUNSYNC_WAREHOUSE_DIR: dir,
          RUNSYNC_START_DATE: formatTimestamp(now - DAYS * MICROS_PER_DAY),
          LOG_LEVEL: ctx.env.LOG_LEVEL ?? 'warn',
          RUNSYNC_PROGRESS_EVERY: ctx.env.RUNSYNC_PROGRESS_EVERY,
          RUNSYNC_SHARE_GROUP: ctx.env.RUNSYNC_SHARE_GROUP,
          RUNSYNC_MEMORY_LIMIT: ctx.env.RUNSYNC_MEMORY_LIMIT,
        });
        const terminal = terminalFor(ctx);
        const logger = configuredLogger(config, {
          pretty: ctx.isTty,
          ...(terminal ? { destination: terminal.logSink, leaveOut: terminal.leaveOut } : {}),
        });
        const engine = createEngine(config, { logger, signal: ctx.signal, now: () => sim.clock.now() });
        try {
          const tracker = new ProgressTracker('demo');
          const stopBar = terminal?.show(tracker);
          const stopLog = stopBar ? () => undefined : logProgress(tracker, logger, config.progressEveryMs);
          const first = await runPass(tracker.track(engine.deps)).finally(() => {
            stopBar?.();
            stopLog();
          });
          ctx.out(passLine('first pass ', first));
          await engine.deps.gate.use((wh) => setState(wh, DEMO_KEY, { seed: SEED, size: SIZE }, sim.clock.now()));
          sim.advance('1h');
          const second = await runPass(engine.deps);
          ctx.out(passLine('an hour on', second));
        } finally {
          await engine.close();
        }
        for (const l of await withWarehouse(dir, { readOnly: true, budget: memoryBudgetOf(ctx.env) }, summary))
          ctx.out(l);
        for (const l of nextSteps(relative(process.cwd(), dir) || '.')) ctx.out(l);
        setExit(EXIT_OK);
      } finally {
        await sim.close();
      }
    });
}
