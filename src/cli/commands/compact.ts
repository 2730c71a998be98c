import { join } from 'node:path';
import { Command } from 'commander';
import { memoryBudgetOf } from '../../config/index.ts';
import { createLogger } from '../../util/logger.ts';
import { compactWarehouse } from '../../warehouse/compact.ts';
import { withPassLock } from '../../warehouse/pass-lock.ts';
import { DB_FILE } from '../../warehouse/types.ts';
import { type CliContext, EXIT_FAILED, EXIT_OK } from '../context.ts';
import { lockWait } from './engine-context.ts';
import { unreadable, warehouseDirFrom } from './warehouse-dir.ts';

// `runsync compact`: rewrites runsync.duckdb into a fresh, packed file now, whatever its size
// (passes do it on their own once the file has grown well beyond its live rows). Waits for a
// writer holding the file, as a load does.

const LOCK_WAIT_MS = 10 * 60_000;

export function compactCommand(ctx: CliContext, setExit: (code: number) => void): Command {
  return new Command('compact')
    .description('rewrite runsync.duckdb into a fresh file holding only its live rows, and swap it in')
    .action(async () => {
      const dir = warehouseDirFrom(ctx.env);
      const file = join(dir, DB_FILE);
      const problem = unreadable(file);
      if (problem !== null) {
        ctx.err(problem);
        setExit(EXIT_FAILED);
        return;
      }
      await withPassLock(dir, 'compact', lockWait(ctx), async () => {
        const logger = createLogger({ level: ctx.env.LOG_LEVEL ?? 'warn' });
        const r = await compactWarehouse(dir, {
          logger,
          budget: memoryBudgetOf(ctx.env),
          lockWaitMs: LOCK_WAIT_MS,
          signal: ctx.signal,
        });
        const mb = (b: number) => `${(b / 1e6).toFixed(1)} MB`;
        if (!r.swapped) {
          ctx.err(`runsync: ${file} was written to during compaction; it is left as it was (${mb(r.after)})`);
          setExit(EXIT_FAILED);
          return;
        }
        ctx.out(`compacted ${file}: ${mb(r.before)} → ${mb(r.after)}`);
        setExit(EXIT_OK);
      });
    });
}
