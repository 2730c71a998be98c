import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Command } from 'commander';
import { ARCHIVE_ENDPOINTS, listArchiveFiles, rawDir } from '../../archive/paths.ts';
import {
  memoryBudgetOf,
  piiSettingsOf,
  prepareWarehouseDir,
  progressEvery,
  shareGroup,
  storageConfig,
} from '../../config/index.ts';
import { exportParquet } from '../../export/parquet.ts';
import { openParquetTarget } from '../../export/target.ts';
import { sayStillWorking } from '../../sync/progress.ts';
import { createLogger } from '../../util/logger.ts';
import { withWarehouse } from '../../warehouse/open.ts';
import { withPassLock } from '../../warehouse/pass-lock.ts';
import { rebuildInPlace } from '../../warehouse/rebuild.ts';
import { DB_FILE } from '../../warehouse/types.ts';
import { type CliContext, EXIT_OK } from '../context.ts';
import { lockWait } from './engine-context.ts';
import { warehouseDirFrom } from './warehouse-dir.ts';

export function rebuildCommand(ctx: CliContext, setExit: (code: number) => void): Command {
  return new Command('rebuild')
    .description('re-derive every table from the raw archive, with no API call')
    .option('--no-export', 'do not rewrite the Parquet tree afterwards')
    .action(async (o: { export: boolean }) => {
      const dir = warehouseDirFrom(ctx.env);
      const share = shareGroup(ctx.env);
      const storage = storageConfig(ctx.env, dir);
      // Read first: a policy that does not parse stops the rebuild before it starts.
      const pii = piiSettingsOf(ctx.env);
      prepareWarehouseDir(dir, share);
      await withPassLock(dir, 'rebuild', lockWait(ctx), async () => {
        let files = 0;
        for (const e of ARCHIVE_ENDPOINTS) files += (await listArchiveFiles(dir, e)).length;
        if (files === 0 && existsSync(join(dir, DB_FILE))) {
          throw new Error(
            `the raw archive ${rawDir(dir)} is empty; rebuilding would empty the warehouse, so nothing was done`,
          );
        }
        const logger = createLogger({
          level: ctx.env.LOG_LEVEL ?? 'warn',
          pretty: ctx.isTty,
          secrets: [...storage.secrets, ...(pii.key ? [pii.key] : [])],
        });
        const stop = sayStillWorking('rebuild', ctx.err, progressEvery(ctx.env));
        const budget = memoryBudgetOf(ctx.env);
        const r = await rebuildInPlace(dir, { logger, budget, pii: pii.policy }).finally(stop);
        const rows = [
          `${r.runs} runs`,
          `${r.childRows} child rows`,
          `${r.states} observed run states`,
          `${r.catalogListings} catalog listing(s)`,
          `${r.toolOptionLists} tool-option list(s)`,
          `${r.rejected} payload(s) still refused`,
        ];
        const seconds = (r.durationMs / 1000).toFixed(1);
        ctx.out(`rebuilt ${r.file} from ${files} archive file(s): ${rows.join(', ')}, in ${seconds} s`);
        if (r.policyFiles) {
          ctx.out(`applied the personal-data policy (${pii.policy?.source}) to ${r.policyFiles} archive file(s) first`);
        }
        if (r.newColumns.length) {
          ctx.out(`filled for all history from the raw archive, new since the last load: ${r.newColumns.join(', ')}`);
        }
        if (o.export) {
          const parquet = openParquetTarget(storage, { logger, share });
          const e = await withWarehouse(dir, { logger, share, budget }, (wh) =>
            exportParquet(wh, { full: true, target: parquet.target }),
          ).finally(() => parquet.close());
          ctx.out(`rewrote the Parquet tree: ${e.written.length} file(s) in ${(e.durationMs / 1000).toFixed(1)} s`);
        }
        setExit(EXIT_OK);
      });
    });
}
