import { rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import { memoryBudgetOf, shareGroup } from '../../config/index.ts';
import { readReportData } from '../../report/data.ts';
import { renderReport } from '../../report/html.ts';
import { NoAnalyticsFileError, openReadSource, type ReadSource } from '../../report/read-source.ts';
import { shareFile } from '../../util/file-share.ts';
import { WarehouseLockedError } from '../../warehouse/errors.ts';
import { systemMicros } from '../../warehouse/open.ts';
import { ANALYTICS_FILE, DB_FILE } from '../../warehouse/types.ts';
import { type CliContext, EXIT_FAILED, EXIT_OK } from '../context.ts';
import { accessOf, unreadable, warehouseDirFrom } from './warehouse-dir.ts';

// `runsync report`: one self-contained HTML page (inline SVG charts, nothing fetched) of the
// ready-made views. Reads runsync.duckdb read-only; while a writer holds it past a short wait,
// reads analytics.duckdb instead and says so.

export function reportCommand(ctx: CliContext, setExit: (code: number) => void): Command {
  return new Command('report')
    .description('write an HTML page with charts: runs per day by resolution, tool error rates, agents, freshness')
    .option('--out <file>', 'where to write it (default: report.html in the warehouse directory)')
    .option('--analytics', 'read analytics.duckdb (views over the Parquet tree) instead of runsync.duckdb')
    .option(
      '--wait <seconds>',
      'how long to wait for a writer holding runsync.duckdb before reading analytics.duckdb',
      seconds,
      5,
    )
    .action(async (o: { out?: string; analytics?: boolean; wait: number }) => {
      const dir = warehouseDirFrom(ctx.env);
      const out = resolve(o.out ?? join(dir, 'report.html'));
      const analytics = o.analytics === true || readsAnalyticsInstead(ctx, dir);
      const problem = analytics
        ? unreadable(join(dir, ANALYTICS_FILE), (f) => `runsync: ${new NoAnalyticsFileError(f).message}`)
        : unreadable(join(dir, DB_FILE));
      if (problem !== null) {
        ctx.err(problem);
        setExit(EXIT_FAILED);
        return;
      }
      const source = await open(ctx, dir, analytics, o.wait * 1000);
      let html: string;
      try {
        html = renderReport(await readReportData(source, { kind: source.kind, file: source.file }, systemMicros()));
      } finally {
        await source.close();
      }
      // Written aside and renamed, so a browser reloading it never sees half a page.
      const tmp = join(dirname(out), `.${process.pid}.report.tmp`);
      try {
        await writeFile(tmp, html);
        // Beside the Parquet tree, the report is for the same readers.
        if (dirname(out) === dir) await shareFile(tmp, shareGroup(ctx.env));
        await rename(tmp, out);
      } finally {
        await rm(tmp, { force: true });
      }
      ctx.out(`wrote ${out} (${Math.ceil(Buffer.byteLength(html) / 1024)} KB) from ${source.file}`);
      setExit(EXIT_OK);
    });
}

/**
 * runsync.duckdb is its owner's alone: a member of RUNSYNC_SHARE_GROUP who may read
 * analytics.duckdb gets the report from it, told so, rather than a refusal.
 */
function readsAnalyticsInstead(ctx: CliContext, dir: string): boolean {
  const file = join(dir, DB_FILE);
  if (accessOf(file) !== 'denied' || accessOf(join(dir, ANALYTICS_FILE)) !== 'readable') return false;
  ctx.err(`runsync: cannot read ${file} (permission denied); reporting from ${ANALYTICS_FILE}, as of the last export`);
  return true;
}

function seconds(v: string): number {
  if (!/^\d+$/.test(v)) throw new InvalidArgumentError('--wait must be a whole number of seconds');
  return Number(v);
}

async function open(ctx: CliContext, dir: string, analytics: boolean, lockWaitMs: number): Promise<ReadSource> {
  const budget = memoryBudgetOf(ctx.env);
  if (analytics) return openReadSource(dir, 'analytics', { budget });
  try {
    return await openReadSource(dir, 'warehouse', { lockWaitMs, budget });
  } catch (e) {
    if (!(e instanceof WarehouseLockedError)) throw e;
    ctx.err(`runsync: ${e.message}; reporting from analytics.duckdb, as of the last export`);
    return openReadSource(dir, 'analytics', { budget });
  }
}
