import { existsSync, statSync } from 'node:fs';
import { open, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { NO_ARCHIVE } from '../archive/sink.ts';
import { openWarehouse } from './open.ts';
import { isOutOfMemory, OUTSIZED_MEMORY_LIMIT } from './out-of-memory.ts';
import { quoteIdent, quoteLiteral } from './sql.ts';
import { DB_FILE, type SqlRunner, type WarehouseOptions } from './types.ts';

// Compaction: runsync.duckdb rewritten into a fresh file beside it, which then takes its place.
// A loaded run replaces its rows (and its steps', messages' and evaluations' rows) by delete and
// insert, and every checkpoint writes the row groups it touched to new blocks and frees the old
// ones. DuckDB reuses freed blocks but does not give them back, and row groups the deletes left part
// empty stay so: over many passes the file grows well beyond its live rows, and VACUUM reclaims
// neither. A copy (COPY FROM DATABASE) writes only the live rows, packed.
//
// The swap never loses a row, whatever is killed when:
//  1. With the file held for writing, its log checkpointed, the copy is written to
//     runsync.duckdb.compact, checked (every table's rows, every object of the schema), closed.
//  2. The old file is released and taken again read-only (which a writer is refused beside); if
//     anyone wrote to it in between, the copy is thrown away (the next chance tries again).
//  3. The copy is flushed to disk, renamed over runsync.duckdb, and the folder flushed.
// Until the rename the old file is whole and in use; the rename is atomic; a copy left by a killed
// compaction is removed by the next one.

export const COMPACT_SUFFIX = '.compact';

/** When passes compact on their own: the share of the file's blocks that hold nothing, and its least size. */
export interface CompactWhen {
  freeShare: number;
  minFreeBytes: number;
}

// Most of what a file holds beyond its live rows is blocks the checkpoints freed, which DuckDB
// reuses but does not give back; the rest, row groups left part empty, is far smaller. A file at
// the share below stays within the bound the scale bench holds it to against a fresh copy of its
// rows (docs/performance.md). The floor keeps a small warehouse,
// where one checkpoint frees a large share of the file every time, from being copied every pass:
// below it the space is not worth the copy.
export const COMPACT_WHEN: CompactWhen = { freeShare: 0.12, minFreeBytes: 16 * 1024 * 1024 };

/** Whether the file's free blocks call for compaction (DuckDB's own count: no data is read). */
export async function compactionDue(db: SqlRunner, when: CompactWhen = COMPACT_WHEN): Promise<boolean> {
  const [s] = await db.all<{ total: bigint; free: bigint; size: bigint }>(
    `SELECT total_blocks AS total, free_blocks AS free, block_size AS size FROM pragma_database_size()
     WHERE database_name = current_database()`,
  );
  if (!s || s.total === 0n) return false;
  const free = Number(s.free);
  return free >= when.freeShare * Number(s.total) && free * Number(s.size) >= when.minFreeBytes;
}

export interface CompactResult {
  /** Bytes of runsync.duckdb before and after. */
  before: number;
  after: number;
  /** False when a writer came in between and the copy was thrown away. */
  swapped: boolean;
}

export type CompactOptions = Pick<
  WarehouseOptions,
  'logger' | 'budget' | 'memoryLimit' | 'lockWaitMs' | 'signal' | 'now'
>;

interface FileMark {
  size: number;
  mtimeMs: number;
  ino: number;
  wal: boolean;
}

function markOf(file: string): FileMark {
  const st = statSync(file);
  return { size: st.size, mtimeMs: st.mtimeMs, ino: st.ino, wal: existsSync(`${file}.wal`) };
}

const sameMark = (a: FileMark, b: FileMark) =>
  a.size === b.size && a.mtimeMs === b.mtimeMs && a.ino === b.ino && !a.wal && !b.wal;

async function fsyncPath(path: string): Promise<void> {
  const fh = await open(path, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/** Removes what a compaction killed midway left beside the warehouse. */
export async function removeCompactLeftovers(dir: string): Promise<void> {
  const copy = join(dir, DB_FILE + COMPACT_SUFFIX);
  await rm(copy, { force: true });
  await rm(`${copy}.wal`, { force: true });
}

/** The schema's objects and every table's rows, to compare the copy with the original. */
async function contents(db: SqlRunner, database: string): Promise<string[]> {
  const name = quoteLiteral(database);
  const objects = await db.all<{ k: string }>(
    `SELECT 'table ' || table_name || ' ' || sql AS k FROM duckdb_tables() WHERE database_name = ${name}
     UNION ALL SELECT 'view ' || view_name || ' ' || sql FROM duckdb_views()
       WHERE database_name = ${name} AND NOT internal
     UNION ALL SELECT 'macro ' || function_name FROM duckdb_functions()
       WHERE database_name = ${name} AND NOT internal
     UNION ALL SELECT 'index ' || index_name FROM duckdb_indexes() WHERE database_name = ${name}
     UNION ALL SELECT 'sequence ' || sequence_name FROM duckdb_sequences() WHERE database_name = ${name}`,
  );
  const out = objects.map((o) => o.k);
  const tables = await db.all<{ t: string }>(
    `SELECT table_name AS t FROM duckdb_tables() WHERE database_name = ${name} ORDER BY table_name`,
  );
  for (const { t } of tables) {
    const [r] = await db.all<{ c: bigint }>(`SELECT count(*) AS c FROM ${quoteIdent(database)}.main.${quoteIdent(t)}`);
    out.push(`rows ${t} ${r?.c ?? 0}`);
  }
  // Each side names its own database in its objects' SQL.
  return out.map((k) => k.replaceAll(database, '<db>')).sort();
}

/**
 * Rewrites runsync.duckdb into a fresh, packed file and swaps it in (see above). Waits up to
 * lockWaitMs for a file another process holds.
 */
export async function compactWarehouse(dir: string, options: CompactOptions = {}): Promise<CompactResult> {
  const file = join(dir, DB_FILE);
  const copy = file + COMPACT_SUFFIX;
  await removeCompactLeftovers(dir);
  const before = statSync(file).size;
  const target = 'runsync_compact';
  const wh = await openWarehouse(dir, { ...options, archive: NO_ARCHIVE });
  try {
    await wh.serial(async () => {
      await wh.run('CHECKPOINT');
      const [{ db } = { db: '' }] = await wh.all<{ db: string }>('SELECT current_database() AS db');
      // The copy builds the tables' key indexes whole, which for a large warehouse needs more than
      // loading's share of the budget: then the export's share, the whole budget, and room.
      const usual = wh.memoryLimit;
      const limits = [
        usual,
        wh.budget.exportMemoryLimit,
        `${Math.floor(wh.budget.bytes / 1e6)}MB`,
        OUTSIZED_MEMORY_LIMIT,
      ];
      try {
        for (const limit of limits) {
          await wh.setMemoryLimit(limit);
          await wh.run(`ATTACH ${quoteLiteral(copy)} AS ${target}`);
          try {
            await wh.run(`COPY FROM DATABASE ${quoteIdent(db)} TO ${target}`);
            break;
          } catch (e) {
            await wh.run(`DETACH ${target}`);
            if (!isOutOfMemory(e) || limit === OUTSIZED_MEMORY_LIMIT) throw e;
            options.logger?.warn(
              { file, error: (e as Error).message, memoryLimit: limit },
              'compaction did not fit within this memory limit; copying again with more',
            );
            await removeCompactLeftovers(dir);
          }
        }
        try {
          const [was, now] = [await contents(wh, db), await contents(wh, target)];
          if (was.join('\n') !== now.join('\n')) {
            const missing = was.filter((k) => !now.includes(k)).slice(0, 3);
            throw new Error(`the compacted copy differs from the warehouse (${missing.join('; ')})`);
          }
        } finally {
          await wh.run(`DETACH ${target}`);
        }
      } finally {
        // After the copy is detached: while attached, its pages may not fit the usual limit.
        await wh.setMemoryLimit(usual);
      }
    });
  } catch (e) {
    await wh.close().catch(() => undefined);
    await removeCompactLeftovers(dir);
    throw e;
  }
  await wh.close();
  if (existsSync(`${copy}.wal`)) {
    await removeCompactLeftovers(dir);
    throw new Error(`the compacted copy ${copy} was left with a write-ahead log`);
  }
  const copied = markOf(file);
  await fsyncPath(copy);
  // Taken again read-only: a writer is refused while it is held, so nothing is written to the old
  // file between the check below and the rename.
  const guard = await openWarehouse(dir, { ...options, readOnly: true });
  try {
    if (!sameMark(copied, markOf(file))) {
      options.logger?.info({ file }, 'the warehouse changed during compaction; it is tried again later');
      await removeCompactLeftovers(dir);
      return { before, after: statSync(file).size, swapped: false };
    }
    await rename(copy, file);
    await fsyncPath(dir);
  } finally {
    await guard.close();
  }
  const after = statSync(file).size;
  options.logger?.info({ file, before, after }, 'compacted the warehouse');
  return { before, after, swapped: true };
}
