import { existsSync } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
import { prepareListing } from '../warehouse/catalog-prepare.ts';
import { checkRunDetail } from '../warehouse/flatten-run.ts';
import { PayloadError } from '../warehouse/flatten-values.ts';
import { applyListing } from '../warehouse/load-catalog.ts';
import { insertRejected } from '../warehouse/load-rejected.ts';
import { stageAndMerge } from '../warehouse/load-runs.ts';
import { applyToolOptions } from '../warehouse/load-tool-options.ts';
import { flattenToolOption } from '../warehouse/flatten-catalog.ts';
import { CATALOG_TABLES, type CatalogTable } from '../warehouse/spec-catalog.ts';
import { openWarehouse } from '../warehouse/warehouse-open.ts';
import { quoteIdent, quoteLiteral } from '../warehouse/warehouse-sql.ts';
import { DB_FILE, type Warehouse, type WarehouseOptions } from '../warehouse/warehouse-types.ts';
import { ArchiveWriter } from './archive-writer.ts';
import { ARCHIVE_ENDPOINTS, listArchiveFiles } from './archive-paths.ts';

// Re-derives every table from the raw archive, with no API call: every archive file is replayed,
// in the order the loads committed, through the same merge as when it was loaded (run batches,
// catalog listings, tool-option lists), so the tables come out the same. Payloads once
// refused are checked again, so a flattening that now accepts them takes them in.

export interface RebuildResult {
  file: string;
  runFiles: number;
  runs: number;
  childRows: number;
  catalogListings: number;
  toolOptionLists: number;
  rejected: number;
  durationMs: number;
}

/** Builds a fresh warehouse in `targetDir` from `sourceDir`/raw; targetDir must hold no warehouse yet. */
export async function rebuildInto(sourceDir: string, targetDir: string, options: WarehouseOptions = {}): Promise<RebuildResult> {
  const t0 = performance.now();
  if (existsSync(join(targetDir, DB_FILE))) throw new Error(`${join(targetDir, DB_FILE)} exists; rebuild writes a fresh warehouse`);
  const wh = await openWarehouse(targetDir, options);
  const result: RebuildResult = { file: wh.file, runFiles: 0, runs: 0, childRows: 0, catalogListings: 0, toolOptionLists: 0, rejected: 0, durationMs: 0 };
  try {
    await rebuildRuns(wh, resolve(sourceDir), result);
    for (const table of CATALOG_TABLES) await rebuildCatalog(wh, resolve(sourceDir), table, result);
    await rebuildToolOptions(wh, resolve(sourceDir), result);
    await wh.run('CHECKPOINT');
  } finally {
    await wh.close();
  }
  result.durationMs = performance.now() - t0;
  return result;
}

/**
 * Rebuilds <dir>/runsync.duckdb in place: holds the current file while a fresh one is built
 * beside it, carries the sync bookkeeping (watermarks, audit, open runs) over, then swaps.
 */
export async function rebuildInPlace(dir: string, options: WarehouseOptions = {}): Promise<RebuildResult> {
  const root = resolve(dir);
  const current = await openWarehouse(root, options);
  const scratch = join(root, `.rebuild-${process.pid}-${randomBytes(4).toString('hex')}`);
  try {
    await mkdir(scratch, { recursive: true, mode: 0o700 });
    const result = await rebuildInto(root, scratch, { ...options, logger: current.logger });
    const fresh = join(scratch, DB_FILE);
    await current.serial(async () => {
      await current.run(`ATTACH ${quoteLiteral(fresh)} AS fresh`);
      try {
        await carryBookkeeping(current);
      } finally {
        await current.run('DETACH fresh');
      }
    });
    await current.close();
    await rename(fresh, current.file);
    await rm(`${current.file}.wal`, { force: true });
    result.file = current.file;
    return result;
  } finally {
    await current.close();
    await rm(scratch, { recursive: true, force: true });
  }
}

// Bookkeeping the archive cannot re-derive: every _sync table (watermarks, cursors, audit, open
// runs, and whatever later migrations add) is carried over as it is, except the schema ledger,
// which the fresh file has written itself. Refusals are re-derived for the endpoints the archive
// keeps, and carried over for any other; export marks are merged, so nothing owed is forgotten.
const DERIVED = new Set(['_sync_migrations', '_sync_rejected', '_sync_export_dirty']);

async function carryBookkeeping(db: Warehouse): Promise<void> {
  const tables = await db.all<{ t: string }>(
    `SELECT a.table_name AS t FROM duckdb_tables() a JOIN duckdb_tables() b ON a.table_name = b.table_name
     WHERE a.database_name = current_database() AND a.schema_name = 'main' AND b.database_name = 'fresh' AND b.schema_name = 'main'
       AND a.table_name LIKE '\\_sync%' ESCAPE '\\' ORDER BY 1`,
  );
  for (const { t } of tables) {
    if (DERIVED.has(t)) continue;
    await db.run(`DELETE FROM fresh.${quoteIdent(t)}`);
    await db.run(`INSERT INTO fresh.${quoteIdent(t)} BY NAME SELECT * FROM ${quoteIdent(t)}`);
  }
  const kept = ARCHIVE_ENDPOINTS.map(quoteLiteral).join(', ');
  await db.run(`INSERT INTO fresh._sync_rejected BY NAME SELECT * FROM _sync_rejected WHERE endpoint NOT IN (${kept})`);
  await db.run(`INSERT INTO fresh._sync_export_dirty BY NAME SELECT * FROM _sync_export_dirty`);
}

function fileList(files: readonly string[]): string {
  return `[${files.map(quoteLiteral).join(', ')}]`;
}

async function rebuildRuns(wh: Warehouse, sourceDir: string, result: RebuildResult): Promise<void> {
  const files = await listArchiveFiles(sourceDir, 'runs');
  result.runFiles = files.length;
  // File by file, in the order they were committed: each file is one batch as it was loaded, so
  // merging them in turn repeats every decision the loads made (which payload won, and when the
  // stored one was fetched).
  for (const file of files) {
    const counts = await wh.transaction((tx) => stageAndMerge(tx, [file]));
    result.childRows += counts.childRows;
  }
  if (files.length) await retryRejectedRuns(wh, files, result);
  const [n] = await wh.all<{ n: bigint }>(`SELECT count(*) AS n FROM runs`);
  result.runs = Number(n?.n ?? 0);
}

async function retryRejectedRuns(wh: Warehouse, files: readonly string[], result: RebuildResult): Promise<void> {
  const rows = await wh.all<{ id: string | null; f: bigint; payload: string }>(
    `SELECT id, epoch_us(fetched_at) AS f, payload FROM read_parquet(${fileList(files)}) WHERE kind = 'rejected' ORDER BY fetched_at`,
  );
  if (rows.length === 0) return;
  const archive = await ArchiveWriter.open(wh.dir, 'runs', wh.now());
  try {
    const still: { id: string | null; reason: string; payload: string; f: number }[] = [];
    for (const r of rows) {
      try {
        checkRunDetail(JSON.parse(r.payload));
        await archive.append({ kind: 'payload', id: r.id, updatedAt: null, fetchedAt: Number(r.f), listedAt: null, payload: r.payload });
      } catch (e) {
        if (!(e instanceof PayloadError) && !(e instanceof SyntaxError)) throw e;
        still.push({ id: r.id, reason: e.message, payload: r.payload, f: Number(r.f) });
      }
    }
    const path = await archive.finish();
    await wh.transaction(async (tx) => {
      if (archive.rows > still.length) await stageAndMerge(tx, [path]);
      for (const s of still) await insertRejected(tx, 'runs', [{ id: s.id, reason: s.reason }], [s.payload], s.f);
    });
    result.rejected += still.length;
  } finally {
    await archive.abort();
  }
}

interface ArchivedRow {
  filename: string;
  kind: string;
  id: string | null;
  f: bigint;
  l: bigint | null;
  payload: string;
}

async function archivedRows(wh: Warehouse, files: readonly string[]): Promise<Map<string, ArchivedRow[]>> {
  const rows = await wh.all<ArchivedRow>(
    `SELECT filename, kind, id, epoch_us(fetched_at) AS f, epoch_us(listed_at) AS l, payload
     FROM read_parquet(${fileList(files)}, filename = true) ORDER BY filename, seq`,
  );
  const byFile = new Map<string, ArchivedRow[]>();
  for (const r of rows) {
    const list = byFile.get(r.filename);
    if (list) list.push(r);
    else byFile.set(r.filename, [r]);
  }
  return byFile;
}

async function rebuildCatalog(wh: Warehouse, sourceDir: string, table: CatalogTable, result: RebuildResult): Promise<void> {
  const files = await listArchiveFiles(sourceDir, table);
  if (files.length === 0) return;
  for (const rows of (await archivedRows(wh, files)).values()) {
    const first = rows[0] as ArchivedRow;
    const manifest = rows.find((r) => r.kind === 'manifest');
    const payloads = rows.filter((r) => r.kind !== 'manifest').map((r) => JSON.parse(r.payload) as unknown);
    const prepared = prepareListing(table, payloads, wh.maskSecrets);
    const presentIds = manifest ? new Set((JSON.parse(manifest.payload) as { ids: string[] }).ids) : undefined;
    const listedAt = Number(first.l ?? first.f);
    await wh.transaction((tx) =>
      applyListing(tx, wh, table, prepared, {
        complete: manifest !== undefined,
        listedAt,
        fetchedAt: Number(first.f),
        archive: false,
        ...(presentIds ? { presentIds } : {}),
      }),
    );
    result.catalogListings++;
    result.rejected += prepared.rejected.length;
  }
}

async function rebuildToolOptions(wh: Warehouse, sourceDir: string, result: RebuildResult): Promise<void> {
  const files = await listArchiveFiles(sourceDir, 'tool-options');
  if (files.length === 0) return;
  for (const rows of (await archivedRows(wh, files)).values()) {
    const items: { row: ReturnType<typeof flattenToolOption>; payload: string }[] = [];
    let whole = true;
    for (const r of rows) {
      try {
        items.push({ row: flattenToolOption(JSON.parse(r.payload)), payload: r.payload });
      } catch (e) {
        if (!(e instanceof PayloadError)) throw e;
        whole = false;
      }
    }
    const fetchedAt = Number((rows[0] as ArchivedRow).f);
    await wh.transaction((tx) => applyToolOptions(tx, wh, items, { whole, fetchedAt, archive: false }));
    result.toolOptionLists++;
  }
}
