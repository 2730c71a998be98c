import type { ArchiveRecord } from '../archive/writer.ts';
import type { CatalogTable } from '../resources/registry.ts';
import { observeAll } from '../resources/schema-observe.ts';
import type { Micros } from '../util/timestamp.ts';
import { applyCatalogPlan } from './catalog-apply.ts';
import { type CatalogPlan, type CurrentVersion, type Listing, planListing } from './catalog-plan.ts';
import { type PreparedListing, prepareListing } from './catalog-prepare.ts';
import { safeJsonText } from './json-text.ts';
import { insertRejected, type RejectedPayload, reasons, rejectedRecords } from './load-rejected.ts';
import { maskToolSecrets } from './mask-secrets.ts';
import {
  anyQuarantined,
  keptOut,
  notYetKeptOut,
  type QuarantinedRecord,
  quarantine,
  quarantinedRecords,
  release,
  splitByContract,
} from './quarantine.ts';
import { evolveSchema } from './schema.ts';
import { quoteIdent, runBookkeeping } from './sql.ts';
import { getState, setState } from './sync-state.ts';
import type { Bookkeeping, SqlRunner, Warehouse } from './types.ts';

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
  /** Objects the schema contract kept out of a frozen table (in _sync_quarantine). */
  quarantined: QuarantinedRecord[];
  /** Whether absent objects were marked deleted (complete, not superseded, every id readable). */
  inferredDeletions: boolean;
  /**
   * When each new version's change happened (its valid_from), for measuring how fresh the catalog
   * is; empty on the table's first complete listing, which records history, not news.
   */
  changedAt: Micros[];
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
  return wh.transaction(async (tx) => {
    const result = await applyListing(tx, wh, table, payloads, {
      complete: options.complete,
      listedAt,
      fetchedAt,
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
  /** Ids of a replayed manifest. */
  presentIds?: ReadonlySet<string>;
}

/** The _sync_state key holding when `table` was last listed completely (what deletions are judged by). */
export function catalogListedKey(table: CatalogTable): string {
  return `catalog.${table}.complete_listed_at`;
}

/**
 * Plans and applies a listing inside the caller's transaction: members the schema does not hold
 * yet become columns first, then the payloads are masked, flattened and judged against the history.
 */
export async function applyListing(
  tx: SqlRunner,
  wh: Warehouse,
  table: CatalogTable,
  payloads: readonly unknown[],
  options: ApplyListingOptions,
): Promise<CatalogLoadResult> {
  // A frozen table's objects that need a schema change are kept out, though listed (not deleted).
  const { accepted, quarantined } = splitByContract(wh, table, payloads);
  await evolveSchema(tx, wh, table, observeAll(wh.resource(table), accepted), options.fetchedAt);
  const resource = wh.resource(table);
  const prepared = prepareListing(resource, accepted, wh.maskSecrets);
  const kept = quarantined.map(({ payload, ...q }) => keptOut(q, safeJsonText(masked(wh, table, payload))));
  prepared.unidentified += kept.filter((q) => q.id === null).length;
  const stateKey = catalogListedKey(table);
  const lastComplete = (await getState<number>(tx, stateKey)) ?? null;
  const superseded = lastComplete !== null && options.listedAt < lastComplete;
  const complete = options.complete && prepared.unidentified === 0 && !superseded;
  if (options.complete && !complete) {
    wh.logger.warn({ table, superseded, unidentified: prepared.unidentified }, 'listing not used to infer deletions');
  }
  const present = new Set([
    ...prepared.presentIds,
    ...(options.presentIds ?? []),
    ...kept.flatMap((q) => (q.id === null ? [] : [q.id])),
  ]);
  const listing: Listing = { objects: prepared.objects, listedAt: options.listedAt, complete, presentIds: present };
  const plan = planListing(await currentVersions(tx, table), listing);

  await applyCatalogPlan(tx, resource, plan);
  if (complete) await setState(tx, stateKey, options.listedAt, options.fetchedAt);
  await insertRejected(tx, table, prepared.refused, options.fetchedAt);
  const newlyKept = await notYetKeptOut(tx, table, kept);
  await quarantine(tx, table, kept, options.fetchedAt);
  if (await anyQuarantined(tx, table))
    await release(
      tx,
      table,
      prepared.objects.map((o) => o.id),
      (list) => `(SELECT id, updated_at FROM ${quoteIdent(table)} WHERE id IN (${list}))`,
    );
  const records = listingRecords(prepared, plan, options.listedAt, options.fetchedAt, present);
  records.push(...quarantinedRecords(newlyKept, options.fetchedAt, options.listedAt));
  const archiveFile = await wh.archive.write(table, records);

  const count = (reason: string) => plan.versions.filter((v) => v.reason === reason).length;
  return {
    received: prepared.objects.length + prepared.refused.length + prepared.duplicates + kept.length,
    added: count('new'),
    changed: count('changed'),
    reappeared: count('reappeared'),
    deleted: plan.deletions.length,
    touched: plan.touches.length,
    unchanged: plan.unchanged,
    stale: plan.stale.length,
    duplicates: prepared.duplicates,
    rejected: reasons(prepared.refused),
    quarantined: kept.map(({ id, updatedAt, reasons }) => ({ id, updatedAt, reasons })),
    inferredDeletions: complete,
    changedAt: lastComplete === null ? [] : plan.versions.map((v) => v.validFrom),
    archiveFile,
  };
}

/** A catalog object as it may be kept: a tool's secrets masked. */
function masked(wh: Warehouse, table: CatalogTable, payload: unknown): unknown {
  return wh.maskSecrets && table === 'tools' ? maskToolSecrets(payload) : payload;
}

async function currentVersions(tx: SqlRunner, table: CatalogTable): Promise<Map<string, CurrentVersion>> {
  const lastRun = table === 'agents' ? 'epoch_us(last_run_at)' : 'NULL';
  const rows = await tx.all<{ id: string; h: string; vf: bigint; ua: bigint | null; del: boolean; lr: bigint | null }>(
    `SELECT id, content_hash AS h, epoch_us(valid_from) AS vf, epoch_us(updated_at) AS ua, is_deleted AS del,
       ${lastRun} AS lr
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

/**
 * What changed the warehouse goes to the archive: new versions, touches, refusals, and a manifest
 * when deletions were inferred.
 */
function listingRecords(
  prepared: PreparedListing,
  plan: CatalogPlan,
  listedAt: Micros,
  fetchedAt: Micros,
  present: ReadonlySet<string>,
): ArchiveRecord[] {
  const changed = [...plan.versions.map((v) => v.object), ...plan.touches.map((t) => t.object)];
  const records: ArchiveRecord[] = changed.map((o) => ({
    kind: 'payload',
    id: o.id,
    updatedAt: o.updatedAtText,
    fetchedAt,
    listedAt,
    payload: o.payload,
  }));
  records.push(...rejectedRecords(prepared.refused, fetchedAt, listedAt));
  if (plan.deletions.length) {
    const ids = [...new Set([...prepared.objects.map((o) => o.id), ...present])].sort();
    const payload = JSON.stringify({ complete: true, ids });
    records.push({ kind: 'manifest', id: null, updatedAt: null, fetchedAt, listedAt, payload });
  }
  return records;
}
