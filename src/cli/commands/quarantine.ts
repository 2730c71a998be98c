import { Command } from 'commander';
import {
  memoryBudgetOf,
  piiSettingsOf,
  prepareWarehouseDir,
  schemaContract,
  shareGroup,
  storageConfig,
} from '../../config/index.ts';
import { exportParquet } from '../../export/parquet.ts';
import { openParquetTarget } from '../../export/target.ts';
import { createLogger } from '../../util/logger.ts';
import { withWarehouse } from '../../warehouse/open.ts';
import { withPassLock } from '../../warehouse/pass-lock.ts';
import { replayQuarantine } from '../../warehouse/quarantine-replay.ts';
import { type CliContext, EXIT_OK } from '../context.ts';
import { lockWait } from './engine-context.ts';
import { warehouseDirFrom } from './warehouse-dir.ts';

// `runsync quarantine replay`: once RUNSYNC_SCHEMA_CONTRACT lets in what a frozen table kept out,
// the records in _sync_quarantine are loaded from the raw archive, with no API call, and the
// Parquet tree brought up to date.

export function quarantineCommand(ctx: CliContext, setExit: (code: number) => void): Command {
  const quarantine = new Command('quarantine').description('records the schema contract kept out of frozen tables');
  quarantine
    .command('replay')
    .description('load the quarantined records from the raw archive under the contract in force')
    .option('--no-export', 'do not bring the Parquet tree up to date afterwards')
    .action(async (o: { export: boolean }) => {
      const dir = warehouseDirFrom(ctx.env);
      const contract = schemaContract(ctx.env);
      const pii = piiSettingsOf(ctx.env);
      const share = shareGroup(ctx.env);
      const storage = storageConfig(ctx.env, dir);
      prepareWarehouseDir(dir, share);
      const logger = createLogger({
        level: ctx.env.LOG_LEVEL ?? 'warn',
        pretty: ctx.isTty,
        secrets: [...storage.secrets, ...(pii.key ? [pii.key] : [])],
      });
      const options = { logger, share, budget: memoryBudgetOf(ctx.env), contract, pii: pii.policy };
      await withPassLock(dir, 'quarantine replay', lockWait(ctx), async () => {
        const r = await withWarehouse(dir, options, (wh) => replayQuarantine(wh));
        const still = Object.entries(r.still).map(([k, n]) => `${n} ${k}`);
        ctx.out(
          `replayed ${r.replayed} quarantined record(s) from the raw archive: ${r.loaded} let in by the contract (${contract.text})` +
            (still.length ? `; still kept out: ${still.join(', ')} (see _sync_quarantine)` : ''),
        );
        if (o.export && r.loaded > 0) {
          const parquet = openParquetTarget(storage, { logger, share });
          const e = await withWarehouse(dir, options, (wh) => exportParquet(wh, { target: parquet.target })).finally(
            () => parquet.close(),
          );
          ctx.out(`brought the Parquet tree up to date: ${e.written.length} file(s)`);
        }
        setExit(EXIT_OK);
      });
    });
  return quarantine;
}
