import { ArchiveWriter } from '../archive/archive-writer.ts';
import type { Micros } from '../util/timestamp.ts';
import { applyCatalogPlan } from './catalog-apply.ts';
import { planListing, type CatalogPlan, type CurrentVersion, type Listing } from './catalog-plan.ts';
import { prepareListing, type PreparedListing } from './catalog-prepare.ts';
import { insertRejected, type RejectedPayload } from './load-rejected.ts';
import type { CatalogTable } from './spec-catalog.ts';
import { getState, setState } from './sync-state.ts';
import { runBookkeeping } from './warehouse-sql.ts';
import type { Bookkeeping, SqlRunner, Warehouse } from './warehouse-types.ts';

// Loading a catalog listing (tools, agents, guidelines, guardrails, runbooks) into the live table
// and its type-2 history, in one transaction with the caller's bookkeeping; the rules are in
// catalog-plan.ts. Deletions are inferred only from a listing the caller marks complete (every
// page read), and not from one taken before the last complete listing already applied.

export interface CatalogLoadOptions {
  /** Every page of the listing was read: objects it lacks are gone. */
  complete: boolean;
  /** When the listing was taken (default: now). */
  listedAt?: Micros;
  /** When the payloads were fetched (default: listedAt). */
  fetchedAt?: Micros;
  /** Ids listed but not passed in (records refused before loading): not absent. */
  presentIds?: ReadonlySet<string>;
  bookkeeping?: Bookkeeping;
}

export interface CatalogLoadResult {
  received: number;
  added: number;
  changed: number;
  reappeared: number;
  deleted: number;
  /** Objects whose only change was an unversioned column (agents' last_run_at). */
  touched: number;
  unchanged: number;
  stale: number;
  duplicates: number;
  rejected: RejectedPayload[];
  /** Whether absent objects were marked deleted (complete, not superseded, every id readable). */
  inferredDeletions: boolean;
  archiveFile: string | null;
}

export async function loadCatalogListing(
  wh: Warehouse,
  table: CatalogTable,
  payloads: readonly unknown[],
  options: CatalogLoadOptions,
): Promise<CatalogLoadResult> {
  const listedAt = options.listedAt ?? wh.now();
  const fetchedAt = options.fetchedAt ?? listedAt;
  const prepared = prepareListing(table, payloads, wh.maskSecrets);
  return wh.transaction(async (tx) => {
    const result = await applyListing(tx, wh, table, prepared, {
      complete: options.complete,
      listedAt,
      fetchedAt,
      archive: true,
      ...(options.presentIds ? { presentIds: options.presentIds } : {}),
    });
    await runBookkeeping(tx, options.bookkeeping);
    return { ...result, received: payloads.length };
  });
}

export interface ApplyListingOptions {
  complete: boolean;
  listedAt: Micros;
  fetchedAt: Micros;
  /** Write what changed to the raw archive (false when replaying the archive itself). */
  archive: boolean;
  /** Ids of a replayed manifest. */
  presentIds?: ReadonlySet<string>;
}

/** The _sync_state key holding when `table` was last listed completely (what deletions are judged by). */
export function catalogListedKey(table: CatalogTable): string {
  return `catalog.${table}.complete_listed_at`;
}

/** Plans and applies a prepared listing inside the caller's transaction. */
export async function applyListing(
  tx: SqlRunner,
  wh: Warehouse,
  table: CatalogTable,
  prepared: PreparedListing,
  options: ApplyListingOptions,
): Promise<CatalogLoadResult> {
  const stateKey = catalogListedKey(table);
  const lastComplete = (await getState<number>(tx, stateKey)) ?? null;
  const superseded = lastComplete !== null && options.listedAt < lastComplete;
  const complete = options.complete && prepared.unidentified === 0 && !superseded;
  if (options.complete && !complete) {
    wh.logger.warn({ table, superseded, unidentified: prepared.unidentified }, 'listing not used to infer deletions');
  }
  const present = new Set([...prepared.presentIds, ...(options.presentIds ?? [])]);
  const listing: Listing = { objects: prepared.objects, listedAt: options.listedAt, complete, presentIds: present };
  const plan = planListing(await currentVersions(tx, table), listing);

  await applyCatalogPlan(tx, table, plan);
  if (complete) await setState(tx, stateKey, options.listedAt, options.fetchedAt);
  await insertRejected(tx, table, prepared.rejected, prepared.rejectedPayloads, options.fetchedAt);
  const archiveFile = options.archive ? await archiveListing(wh, table, prepared, plan, options.listedAt, options.fetchedAt, present) : null;

  const count = (reason: string) => plan.versions.filter((v) => v.reason === reason).length;
  return {
    received: prepared.objects.length + prepared.rejected.length + prepared.duplicates,
    added: count('new'),
    changed: count('changed'),
    reappeared: count('reappeared'),
    deleted: plan.deletions.length,
    touched: plan.touches.length,
    unchanged: plan.unchanged,
    stale: plan.stale.length,
    duplicates: prepared.duplicates,
    rejected: prepared.rejected,
    inferredDeletions: complete,
    archiveFile,
  };
}

async function currentVersions(tx: SqlRunner, table: CatalogTable): Promise<Map<string, CurrentVersion>> {
  const lastRun = table === 'agents' ? 'epoch_us(last_run_at)' : 'NULL';
  const rows = await tx.all<{ id: string; h: string; vf: bigint; ua: bigint | null; del: boolean; lr: bigint | null }>(
    `SELECT id, content_hash AS h, epoch_us(valid_from) AS vf, epoch_us(updated_at) AS ua, is_deleted AS del, ${lastRun} AS lr
     FROM ${table}_history WHERE valid_to IS NULL`,
  );
  const out = new Map<string, CurrentVersion>();
  for (const r of rows) {
    out.set(r.id, {
      contentHash: r.h,
      validFrom: Number(r.vf),
      updatedAt: r.ua === null ? null : Number(r.ua),
      isDeleted: r.del,
      lastRunAt: r.lr === null ? null : Number(r.lr),
    });
  }
  return out;
}

/** What changed the warehouse goes to the archive: new versions, touches, refusals, and a manifest when deletions were inferred. */
async function archiveListing(
  wh: Warehouse,
  table: CatalogTable,
  prepared: PreparedListing,
  plan: CatalogPlan,
  listedAt: Micros,
  fetchedAt: Micros,
  present: ReadonlySet<string>,
): Promise<string | null> {
  const changed = [...plan.versions.map((v) => v.object), ...plan.touches.map((t) => t.object)];
  if (changed.length === 0 && prepared.rejected.length === 0 && plan.deletions.length === 0) return null;
  const archive = await ArchiveWriter.open(wh.dir, table, wh.now());
  try {
    for (const o of changed) {
      await archive.append({ kind: 'payload', id: o.id, updatedAt: o.updatedAtText, fetchedAt, listedAt, payload: o.payload });
    }
    for (let i = 0; i < prepared.rejected.length; i++) {
      const r = prepared.rejected[i] as RejectedPayload;
      await archive.append({ kind: 'rejected', id: r.id, updatedAt: null, fetchedAt, listedAt, payload: prepared.rejectedPayloads[i] ?? 'null' });
    }
    if (plan.deletions.length) {
      const ids = [...new Set([...prepared.objects.map((o) => o.id), ...present])].sort();
      await archive.append({ kind: 'manifest', id: null, updatedAt: null, fetchedAt, listedAt, payload: JSON.stringify({ complete: true, ids }) });
    }
    return await archive.commit();
  } catch (e) {
    await archive.abort();
    throw e;
  }
}
