import { join } from 'node:path';
import { Command } from 'commander';
import { memoryBudgetOf, prepareWarehouseDir, progressEvery, shareGroup, storageConfig } from '../../config/index.ts';
import { exportParquet } from '../../export/parquet.ts';
import { openParquetTarget } from '../../export/target.ts';
import { sayStillWorking } from '../../sync/progress.ts';
import { createLogger } from '../../util/logger.ts';
import { withWarehouse } from '../../warehouse/open.ts';
import { withPassLock } from '../../warehouse/pass-lock.ts';
import { DB_FILE } from '../../warehouse/types.ts';
import { type CliContext, EXIT_OK } from '../context.ts';
import { lockWait } from './engine-context.ts';
import { unreadable, warehouseDirFrom } from './warehouse-dir.ts';

export function exportCommand(ctx: CliContext, setExit: (code: number) => void): Command {
  return new Command('export')
    .description(
      'Parquet export of what changed since the last export, to a folder or an object store (RUNSYNC_PARQUET_URL)',
    )
    .option('--full', 'rewrite every partition')
    .action(async (o: { full?: boolean }) => {
      const dir = warehouseDirFrom(ctx.env);
      const problem = unreadable(join(dir, DB_FILE));
      if (problem !== null) throw new Error(problem.replace(/^runsync: /, ''));
      await withPassLock(dir, 'export', lockWait(ctx), async () => {
        const share = shareGroup(ctx.env);
        const storage = storageConfig(ctx.env, dir);
        prepareWarehouseDir(dir, share);
        const logger = createLogger({
          level: ctx.env.LOG_LEVEL ?? 'warn',
          pretty: ctx.isTty,
          secrets: storage.secrets,
        });
        const stop = sayStillWorking('export', ctx.err, progressEvery(ctx.env));
        const parquet = openParquetTarget(storage, { logger, share });
        const budget = memoryBudgetOf(ctx.env);
        const r = await withWarehouse(dir, { logger, share, budget }, (wh) =>
          exportParquet(wh, { full: o.full === true, target: parquet.target }),
        ).finally(async () => {
          stop();
          await parquet.close();
        });
        const what = `${r.dates.length} created_date partition(s) and ${r.tables.length} table(s)`;
        const files = `${r.written.length} file(s) written, ${r.removed.length} removed`;
        ctx.out(`exported ${what}: ${files}, in ${(r.durationMs / 1000).toFixed(1)} s`);
        if (r.generation !== null) ctx.out(`published generation ${r.generation} at ${r.location}/_latest.json`);
        ctx.out(`views for readers: ${r.analyticsFile}`);
        setExit(EXIT_OK);
      });
    });
}
