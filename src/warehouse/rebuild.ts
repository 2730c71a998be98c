import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readdir, rename, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { ARCHIVE_ENDPOINTS, listArchiveFiles } from '../archive/paths.ts';
import { NO_ARCHIVE } from '../archive/sink.ts';
import { resourceOfEndpoint } from '../pii/index.ts';
import type { PiiPolicy } from '../pii/types.ts';
import { CATALOG_TABLES, type CatalogTable } from '../resources/registry.ts';
import { EVOLVED_CHILD_KEY } from '../resources/schema-evolve.ts';
import type { ColumnSpec, ResourceSpec } from '../resources/types.ts';
import { defaultMemoryBudget } from '../util/memory-budget.ts';
import { processAlive } from '../util/process-alive.ts';
import { insertDeletions, type OpenDeletion, openDeletions, reapplyDeletions } from './deletions.ts';
import { applyListing } from './load-catalog.ts';
import { applyToolOptions } from './load-tool-options.ts';
import { openWarehouse } from './open.ts';
import { reapplied, reapplyPolicy } from './rebuild-policy.ts';
import { RANGE_RUNS, rebuildRuns } from './rebuild-runs.ts';
import { RUN_KEYS } from './run-keys.ts';
import { quoteIdent, quoteLiteral } from './sql.ts';
import { DB_FILE, type Warehouse, type WarehouseOptions } from './types.ts';

// Re-derives every table from the raw archive, with no API call, so the tables come out as the loads
// left them: the runs from the payloads the loads' merges kept, chosen from the archive's keys and
// streamed into the fresh tables (rebuild-runs.ts); catalog listings and tool-option lists replayed
// in the order the loads committed, through the same merge as when they were loaded. Payloads once
// refused are checked again, so a flattening that now accepts them takes them in.

export interface RebuildResult {
  file: string;
  runFiles: number;
  runs: number;
  childRows: number;
  /** Observed states of runs (runs_history rows). */
  states: number;
  catalogListings: number;
  toolOptionLists: number;
  rejected: number;
  /** Columns and tables schema evolution added that the warehouse before the rebuild lacked (table.column). */
  newColumns: string[];
  /** Archive files written under another personal-data policy, and so written again under this one. */
  policyFiles: number;
  durationMs: number;
}

export interface RebuildOptions extends WarehouseOptions {
  /** Run details a statement reads (tests cut them finer). */
  rangeRuns?: number;
  /** Deletions of runs still in force (the warehouse's _sync_deletions): applied again. */
  deletions?: readonly OpenDeletion[];
}

/** Builds a fresh warehouse in `targetDir` from `sourceDir`/raw; targetDir must hold no warehouse yet. */
export async function rebuildInto(
  sourceDir: string,
  targetDir: string,
  options: RebuildOptions = {},
): Promise<RebuildResult> {
  const t0 = performance.now();
  if (existsSync(join(targetDir, DB_FILE)))
    throw new Error(`${join(targetDir, DB_FILE)} exists; rebuild writes a fresh warehouse`);
  // The archive is the input here: replaying it must not archive it again. JavaScript waits while
  // DuckDB works, so DuckDB gets the export's share of the budget and its threads.
  const budget = options.budget ?? defaultMemoryBudget();
  const wh = await openWarehouse(targetDir, {
    ...options,
    archive: NO_ARCHIVE,
    memoryLimit: options.memoryLimit ?? budget.exportMemoryLimit,
    threads: options.threads ?? budget.bulkThreads,
  });
  const result: RebuildResult = {
    file: wh.file,
    runFiles: 0,
    runs: 0,
    childRows: 0,
    states: 0,
    catalogListings: 0,
    toolOptionLists: 0,
    rejected: 0,
    newColumns: [],
    policyFiles: 0,
    durationMs: 0,
  };
  try {
    await rebuildRuns(
      wh,
      resolve(sourceDir),
      { rangeRuns: options.rangeRuns ?? RANGE_RUNS, lanes: budget.bulkLanes },
      result,
    );
    for (const table of CATALOG_TABLES) await rebuildCatalog(wh, resolve(sourceDir), table, result);
    await rebuildToolOptions(wh, resolve(sourceDir), result);
    if (options.deletions?.length) {
      const deletions = options.deletions;
      await wh.transaction(async (tx) => {
        await insertDeletions(tx, deletions);
        await reapplyDeletions(tx, wh.resource('runs'));
      });
    }
    await wh.run('CHECKPOINT');
    result.newColumns = wh.resources.flatMap(evolvedNames);
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
export async function rebuildInPlace(dir: string, options: RebuildOptions = {}): Promise<RebuildResult> {
  const root = resolve(dir);
  const current = await openWarehouse(root, options);
  const scratch = join(root, `.rebuild-${process.pid}-${randomBytes(4).toString('hex')}`);
  try {
    await removeStopped(root, current);
    await mkdir(scratch, { recursive: true, mode: 0o700 });
    // A changed policy reaches what was archived before the tables are derived from it.
    const policy = await current.serial(() => reapplyPolicy(current, root, current.pii));
    const deletions = await current.serial(() => openDeletions(current));
    const result = await rebuildInto(root, scratch, { ...options, logger: current.logger, deletions });
    result.policyFiles = policy.files;
    const fresh = join(scratch, DB_FILE);
    const had = new Set(current.resources.flatMap(evolvedNames));
    result.newColumns = result.newColumns.filter((n) => !had.has(n));
    await current.serial(async () => {
      await current.run(`ATTACH ${quoteLiteral(fresh)} AS fresh`);
      try {
        await carryBookkeeping(current, current.pii);
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

const SCRATCH = /^\.rebuild-(\d+)-[0-9a-f]{8}$/;

/**
 * Removes what a rebuild that was stopped outright (SIGKILL, a machine gone) left beside the
 * warehouse: a fresh file as large as the warehouse itself. Its maker is gone: a rebuild holds the
 * warehouse until its swap, and this one holds it now; a live process of that id is left alone.
 */
async function removeStopped(root: string, current: Warehouse): Promise<void> {
  for (const name of await readdir(root)) {
    const pid = Number(SCRATCH.exec(name)?.[1]);
    if (!pid || pid === process.pid || processAlive(pid)) continue;
    await rm(join(root, name), { recursive: true, force: true });
    current.logger.warn({ path: join(root, name) }, 'removed what a rebuild that was stopped left behind');
  }
}

// Bookkeeping the archive cannot re-derive: every _sync table (watermarks, cursors, audit, open
// runs, and whatever later migrations add) is carried over as it is, except the ledgers of
// migrations and schema changes, which the fresh file has written itself, where its runs lie and
// what the schema contract keeps out, which it derived. Refusals are re-derived for the endpoints
// the archive keeps, and carried over for any other; export marks are merged, so nothing owed is
// forgotten.
const DERIVED = new Set([
  '_sync_migrations',
  '_sync_rejected',
  '_sync_quarantine',
  '_sync_export_dirty',
  '_sync_schema_changes',
  RUN_KEYS,
]);

async function carryBookkeeping(db: Warehouse, policy: PiiPolicy | null): Promise<void> {
  const tables = await db.all<{ t: string }>(
    `SELECT a.table_name AS t FROM duckdb_tables() a JOIN duckdb_tables() b ON a.table_name = b.table_name
     WHERE a.database_name = current_database() AND a.schema_name = 'main'
       AND b.database_name = 'fresh' AND b.schema_name = 'main'
       AND a.table_name LIKE '\\_sync%' ESCAPE '\\' ORDER BY 1`,
  );
  for (const { t } of tables) {
    if (DERIVED.has(t)) continue;
    await db.run(`DELETE FROM fresh.${quoteIdent(t)}`);
    await db.run(`INSERT INTO fresh.${quoteIdent(t)} BY NAME SELECT * FROM ${quoteIdent(t)}`);
  }
  const kept = ARCHIVE_ENDPOINTS.map(quoteLiteral).join(', ');
  await db.run(`INSERT INTO fresh._sync_rejected BY NAME SELECT * FROM _sync_rejected WHERE endpoint NOT IN (${kept})`);
  if (policy) await reapplyRejected(db, policy);
  await db.run(`INSERT INTO fresh._sync_export_dirty BY NAME SELECT * FROM _sync_export_dirty`);
}

/** Records the client refused, kept whole: the policy in force applies to them too. */
async function reapplyRejected(db: Warehouse, policy: PiiPolicy): Promise<void> {
  const kept = ARCHIVE_ENDPOINTS.map(quoteLiteral).join(', ');
  const rows = await db.all<{ n: bigint; endpoint: string; payload: string | null }>(
    `SELECT rowid AS n, endpoint, payload FROM fresh._sync_rejected WHERE endpoint NOT IN (${kept}) AND payload IS NOT NULL`,
  );
  for (const r of rows) {
    const resource = resourceOfEndpoint(r.endpoint);
    const applied = resource === null ? null : reapplied(policy, resource, r.payload as string);
    if (applied === null || applied.text === r.payload) continue;
    await db.run(`UPDATE fresh._sync_rejected SET payload = $1 WHERE rowid = $2`, [applied.text, r.n]);
  }
}

/** The evolved columns and child tables of a resource, as table.column and table. */
function evolvedNames(r: ResourceSpec): string[] {
  const cols = (table: string, columns: readonly ColumnSpec[]) =>
    columns.filter((c) => c.evolved).map((c) => `${table}.${c.name}`);
  return [
    ...cols(r.table, r.columns),
    ...r.children.flatMap((c) => [...(c.key === EVOLVED_CHILD_KEY ? [c.table] : []), ...cols(c.table, c.columns)]),
  ];
}

function fileList(files: readonly string[]): string {
  return `[${files.map(quoteLiteral).join(', ')}]`;
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

async function rebuildCatalog(
  wh: Warehouse,
  sourceDir: string,
  table: CatalogTable,
  result: RebuildResult,
): Promise<void> {
  const files = await listArchiveFiles(sourceDir, table);
  if (files.length === 0) return;
  for (const rows of (await archivedRows(wh, files)).values()) {
    const first = rows[0] as ArchivedRow;
    const manifest = rows.find((r) => r.kind === 'manifest');
    const payloads = rows.filter((r) => r.kind !== 'manifest').map((r) => JSON.parse(r.payload) as unknown);
    const presentIds = manifest ? new Set((JSON.parse(manifest.payload) as { ids: string[] }).ids) : undefined;
    const listedAt = Number(first.l ?? first.f);
    const applied = await wh.transaction((tx) =>
      applyListing(tx, wh, table, payloads, {
        complete: manifest !== undefined,
        listedAt,
        fetchedAt: Number(first.f),
        ...(presentIds ? { presentIds } : {}),
      }),
    );
    result.catalogListings++;
    result.rejected += applied.rejected.length;
  }
}

async function rebuildToolOptions(wh: Warehouse, sourceDir: string, result: RebuildResult): Promise<void> {
  const files = await listArchiveFiles(sourceDir, 'tool-options');
  if (files.length === 0) return;
  for (const rows of (await archivedRows(wh, files)).values()) {
    const options = rows.map((r) => JSON.parse(r.payload) as unknown);
    const fetchedAt = Number((rows[0] as ArchivedRow).f);
    const applied = await wh.transaction((tx) => applyToolOptions(tx, wh, options, { fetchedAt }));
    result.toolOptionLists++;
    result.rejected += applied.rejected.length;
  }
}
