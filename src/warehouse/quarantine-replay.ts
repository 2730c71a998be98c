import { listArchiveFiles } from '../archive/paths.ts';
import { CATALOG_TABLES, type CatalogTable } from '../resources/registry.ts';
import { loadCatalogListing } from './load-catalog.ts';
import { loadRunDetails } from './load-runs.ts';
import { QUARANTINED } from './quarantine.ts';
import { quoteLiteral } from './sql.ts';
import type { Warehouse } from './types.ts';

// `runsync quarantine replay`: the records the schema contract kept out, read back from the raw
// archive and loaded again through the loads themselves, under the contract in force. Those it
// now lets in land (a version older than the one stored is not applied, as in any load) and leave
// the quarantine; the others stay, with their reasons brought up to date. Runs are replayed in the
// order they were fetched, a slice at a time; catalog objects listing by listing, as of when they
// were listed. Tool options need no replay: every snapshot lists them whole again.

export interface ReplayResult {
  /** Records read back from the archive. */
  replayed: number;
  /** Of those, the ones the contract let in. */
  loaded: number;
  /** Records still kept out, by resource. */
  still: Record<string, number>;
}

/** Payloads a load is given at a time. */
const SLICE = 200;

interface KeptRow {
  filename: string;
  seq: bigint;
  f: bigint;
  l: bigint | null;
}

export async function replayQuarantine(wh: Warehouse): Promise<ReplayResult> {
  const out: ReplayResult = { replayed: 0, loaded: 0, still: {} };
  await replayRuns(wh, out);
  for (const table of CATALOG_TABLES) await replayCatalog(wh, table, out);
  const rows = await wh.all<{ r: string; n: bigint }>(
    `SELECT resource AS r, count(*) AS n FROM _sync_quarantine GROUP BY 1 ORDER BY 1`,
  );
  out.still = Object.fromEntries(rows.map((r) => [r.r, Number(r.n)]));
  return out;
}

/** Where the archive keeps the payloads a resource's quarantine names, oldest fetch first. */
async function keptRows(wh: Warehouse, resource: string, endpoint: string): Promise<KeptRow[]> {
  const files = await listArchiveFiles(wh.dir, endpoint as Parameters<typeof listArchiveFiles>[1]);
  if (files.length === 0) return [];
  const [n] = await wh.all<{ n: bigint }>(`SELECT count(*) AS n FROM _sync_quarantine WHERE resource = $1`, [resource]);
  if (Number(n?.n ?? 0) === 0) return [];
  return wh.all<KeptRow>(
    `SELECT a.filename, a.seq, epoch_us(a.fetched_at) AS f, epoch_us(a.listed_at) AS l
     FROM read_parquet([${files.map(quoteLiteral).join(', ')}], filename = true) a
     SEMI JOIN (SELECT record_id, payload_hash FROM _sync_quarantine WHERE resource = $1) q
       ON a.id IS NOT DISTINCT FROM q.record_id AND md5(a.payload) = q.payload_hash
     WHERE a.kind = '${QUARANTINED}'
     ORDER BY a.fetched_at, a.filename, a.seq`,
    [resource],
  );
}

async function payloadsOf(wh: Warehouse, rows: readonly KeptRow[]): Promise<unknown[]> {
  const out: unknown[] = [];
  const byFile = new Map<string, bigint[]>();
  for (const r of rows) byFile.set(r.filename, [...(byFile.get(r.filename) ?? []), r.seq]);
  for (const [file, seqs] of byFile) {
    const texts = await wh.all<{ payload: string }>(
      `SELECT payload FROM read_parquet(${quoteLiteral(file)}) WHERE seq IN (${seqs.join(', ')}) ORDER BY seq`,
    );
    for (const t of texts) out.push(JSON.parse(t.payload) as unknown);
  }
  return out;
}

async function replayRuns(wh: Warehouse, out: ReplayResult): Promise<void> {
  const rows = await keptRows(wh, 'runs', 'runs');
  for (let i = 0; i < rows.length; i += SLICE) {
    const slice = rows.slice(i, i + SLICE);
    // Each load is given its payloads' own fetch time: what an older fetch saw never wins over a newer one.
    for (const group of groupBy(slice, (r) => r.f)) {
      const r = await loadRunDetails(wh, await payloadsOf(wh, group), { fetchedAt: Number(group[0]?.f) });
      out.replayed += group.length;
      out.loaded += group.length - r.quarantined.length - r.rejected.length;
    }
  }
}

async function replayCatalog(wh: Warehouse, table: CatalogTable, out: ReplayResult): Promise<void> {
  const rows = await keptRows(wh, table, table);
  for (const listing of groupBy(rows, (r) => r.filename)) {
    const first = listing[0] as KeptRow;
    const r = await loadCatalogListing(wh, table, await payloadsOf(wh, listing), {
      complete: false,
      listedAt: Number(first.l ?? first.f),
      fetchedAt: Number(first.f),
    });
    out.replayed += listing.length;
    out.loaded += listing.length - r.quarantined.length - r.rejected.length;
  }
}

/** Consecutive rows with the same key, as groups. */
function groupBy<T, K>(rows: readonly T[], key: (r: T) => K): T[][] {
  const out: T[][] = [];
  let last: K | undefined;
  for (const r of rows) {
    const k = key(r);
    if (out.length === 0 || k !== last) out.push([]);
    (out[out.length - 1] as T[]).push(r);
    last = k;
  }
  return out;
}
