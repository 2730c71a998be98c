import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { defaultMemoryBudget, type MemoryBudget } from '../util/memory-budget.ts';
import { openWarehouse } from '../warehouse/open.ts';
import { sqlRunner } from '../warehouse/sql.ts';
import { ANALYTICS_FILE, type SqlRunner } from '../warehouse/types.ts';

// What `runsync query` and `runsync report` read: the warehouse file, opened read-only (refused
// while a writer holds it: WarehouseLockedError), or analytics.duckdb, the views over the Parquet
// tree, which no writer ever opens and which is as fresh as the last export.

export type SourceKind = 'warehouse' | 'analytics';

export interface ReadSource extends SqlRunner {
  readonly kind: SourceKind;
  readonly file: string;
  close(): Promise<void>;
}

export interface ReadSourceOptions {
  /** How long to retry while a writer holds runsync.duckdb (default 0). */
  lockWaitMs?: number;
  /** DuckDB's memory_limit for the reader (default: the budget's, the export's share for analytics.duckdb). */
  memoryLimit?: string;
  /** The process's memory budget (default: RUNSYNC_MEMORY_LIMIT's default). */
  budget?: MemoryBudget;
}

/** analytics.duckdb is not there: nothing was exported yet. */
export class NoAnalyticsFileError extends Error {
  override readonly name = 'NoAnalyticsFileError';
  constructor(readonly file: string) {
    super(`there is no ${file} yet; a sync pass or \`runsync export\` writes it`);
  }
}

export async function openReadSource(
  dir: string,
  kind: SourceKind,
  options: ReadSourceOptions = {},
): Promise<ReadSource> {
  if (kind === 'warehouse') {
    const wh = await openWarehouse(dir, {
      readOnly: true,
      lockWaitMs: options.lockWaitMs ?? 0,
      ...(options.budget ? { budget: options.budget } : {}),
      ...(options.memoryLimit ? { memoryLimit: options.memoryLimit } : {}),
    });
    return {
      kind,
      file: wh.file,
      connection: wh.connection,
      run: wh.run,
      all: wh.all,
      close: async () => void (await wh.close()),
    };
  }
  const file = join(dir, ANALYTICS_FILE);
  if (!existsSync(file)) throw new NoAnalyticsFileError(file);
  const budget = options.budget ?? defaultMemoryBudget();
  // The views read every row of the Parquet tree, and their medians and distinct counts hold
  // what they read in each thread's memory; JavaScript waits meanwhile, so the reader takes
  // the export's share.
  const instance = await DuckDBInstance.create(file, {
    access_mode: 'READ_ONLY',
    memory_limit: options.memoryLimit ?? budget.exportMemoryLimit,
    threads: String(budget.exportThreads),
  });
  const connection = await instance.connect();
  const db = sqlRunner(connection);
  await db.run(`SET TimeZone = 'UTC'`);
  let closed = false;
  return {
    kind,
    file,
    ...db,
    async close() {
      if (closed) return;
      closed = true;
      connection.closeSync();
      instance.closeSync();
    },
  };
}
