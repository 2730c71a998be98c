import type { Logger } from '../util/logger.ts';
import type { MemoryBudget } from '../util/memory-budget.ts';
import type { Micros } from '../util/timestamp.ts';
import type { WarehouseLockedError } from '../warehouse/errors.ts';
import { openWarehouse } from '../warehouse/open.ts';
import type { Warehouse, WarehouseOptions } from '../warehouse/types.ts';

// The sync engine's only way into runsync.duckdb. DuckDB lets one process hold the file, and even
// a reader is refused beside it, so the engine opens the file for each unit of work (a load, a
// look-up) and closes it straight after: an analyst can get in between two loads. Units of one
// process run one at a time. A file held by someone else is waited for, and said so once.

export interface WarehouseGateOptions {
  dir: string;
  logger: Logger;
  /** How long one unit waits for a file held by another process (default 10 minutes). */
  lockWaitMs?: number;
  maskSecrets?: boolean;
  schemaEvolution?: boolean;
  pii?: WarehouseOptions['pii'];
  contract?: WarehouseOptions['contract'];
  memoryLimit?: string;
  /** The process's memory budget: DuckDB's limit and threads for every unit. */
  budget?: MemoryBudget;
  now?: () => Micros;
  /** Told when a unit finds the file held (for status lines and metrics). */
  onLocked?: (error: WarehouseLockedError) => void;
  /** Stops waiting for a held file. */
  signal?: AbortSignal;
  share?: WarehouseOptions['share'];
}

export const DEFAULT_LOCK_WAIT_MS = 10 * 60_000;

/**
 * One checkpoint in this many of the units that keep their log (a pass's batches) merges the row
 * groups the others wrote (see open.ts); a unit that does not keep its log always does, so a
 * pass ends with its row groups merged.
 */
export const MERGE_ROW_GROUPS_EVERY = 8;

export class WarehouseGate {
  private chain: Promise<unknown> = Promise.resolve();
  private lastHolder: number | null | undefined;
  /** Checkpoints since the last that merged row groups. */
  private unmerged = 0;

  constructor(private readonly options: WarehouseGateOptions) {}

  get dir(): string {
    return this.options.dir;
  }

  /**
   * Opens the warehouse, runs `fn`, closes it; after every earlier unit of this gate. `memoryLimit`
   * raises DuckDB's for this unit only (a payload too large for the usual limit); `keepLog` leaves
   * a small write-ahead log to the units after it (a batch of a pass, which ends with others).
   */
  use<T>(fn: (wh: Warehouse) => Promise<T>, unit: { memoryLimit?: string; keepLog?: boolean } = {}): Promise<T> {
    const run = async (): Promise<T> => {
      const t0 = performance.now();
      const wh = await openWarehouse(this.options.dir, {
        ...this.openOptions(),
        ...(unit.memoryLimit ? { memoryLimit: unit.memoryLimit } : {}),
      });
      this.lastHolder = undefined;
      const t1 = performance.now();
      let t2 = t1;
      try {
        const out = await fn(wh);
        t2 = performance.now();
        return out;
      } finally {
        const keepLog = unit.keepLog ?? false;
        const mergeRowGroups = !keepLog || this.unmerged + 1 >= MERGE_ROW_GROUPS_EVERY;
        if (await wh.close({ keepLog, mergeRowGroups })) this.unmerged = mergeRowGroups ? 0 : this.unmerged + 1;
        const ms = (a: number, b: number) => Math.round(b - a);
        this.options.logger.debug(
          { openMs: ms(t0, t1), workMs: ms(t1, t2), closeMs: ms(t2, performance.now()) },
          'warehouse unit',
        );
      }
    };
    const next = this.chain.then(run, run);
    this.chain = next.catch(() => undefined);
    return next;
  }

  /**
   * Runs `fn` with the warehouse closed in this process, after every earlier unit and before any
   * later one: for work that opens the file its own way (compaction), given the gate's options.
   */
  alone<T>(fn: (options: WarehouseOptions) => Promise<T>): Promise<T> {
    const run = () => fn(this.openOptions());
    const next = this.chain.then(run, run);
    this.chain = next.catch(() => undefined);
    return next;
  }

  private openOptions(): WarehouseOptions {
    const o = this.options;
    const options: WarehouseOptions = {
      logger: o.logger,
      lockWaitMs: o.lockWaitMs ?? DEFAULT_LOCK_WAIT_MS,
      onLocked: (e) => {
        // One line per holder, not one per retry.
        if (this.lastHolder !== e.holderPid) {
          this.lastHolder = e.holderPid;
          o.logger.warn(
            { holderPid: e.holderPid, holder: e.holder },
            'the warehouse is held by another process; waiting for it',
          );
        }
        o.onLocked?.(e);
      },
    };
    if (o.maskSecrets !== undefined) options.maskSecrets = o.maskSecrets;
    if (o.schemaEvolution !== undefined) options.schemaEvolution = o.schemaEvolution;
    if (o.pii) options.pii = o.pii;
    if (o.contract) options.contract = o.contract;
    if (o.memoryLimit !== undefined) options.memoryLimit = o.memoryLimit;
    if (o.budget !== undefined) options.budget = o.budget;
    if (o.now !== undefined) options.now = o.now;
    if (o.signal !== undefined) options.signal = o.signal;
    if (o.share) options.share = o.share;
    return options;
  }
}
