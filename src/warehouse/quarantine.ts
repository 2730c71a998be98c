import { createHash } from 'node:crypto';
import { listValue } from '@duckdb/node-api';
import type { ArchiveRecord } from '../archive/writer.ts';
import { refusalReason, refusedChanges } from '../resources/contract.ts';
import { knownNode } from '../resources/schema-observe.ts';
import type { Micros } from '../util/timestamp.ts';
import { stringMember } from './json-text.ts';
import { US_TO_TSTZ } from './sql.ts';
import type { SqlRunner, Warehouse } from './types.ts';

// Records the schema contract keeps out of a frozen table (contract.ts): loads judge each payload
// of a resource with a frozen table, keep the refused ones in the raw archive (as `quarantined`
// rows) and in _sync_quarantine with why, one row per record, its latest version. A version of
// the record that loads later, or a replay once the contract lets it in, takes it out.

export interface QuarantinedRecord {
  id: string | null;
  updatedAt: string | null;
  reasons: string[];
}

/** A record kept out, with its payload as archived and the MD5 of that text. */
export interface KeptOut extends QuarantinedRecord {
  text: string;
  hash: string;
}

export function keptOut(record: QuarantinedRecord, text: string): KeptOut {
  return { ...record, text, hash: createHash('md5').update(text, 'utf8').digest('hex') };
}

/** Archive rows of records the contract kept out. */
export const QUARANTINED = 'quarantined' as const;

/** A resource's payloads split by the contract: those that may load, and those it keeps out. */
export function splitByContract<T>(
  wh: Warehouse,
  table: string,
  payloads: readonly T[],
  idMember = 'id',
): { accepted: T[]; quarantined: (QuarantinedRecord & { payload: T })[] } {
  if (!wh.contract.freezes(table)) return { accepted: [...payloads], quarantined: [] };
  const resource = wh.resource(table);
  const known = knownNode(resource);
  const out = { accepted: [] as T[], quarantined: [] as (QuarantinedRecord & { payload: T })[] };
  for (const p of payloads) {
    const refused = refusedChanges(wh.contract, resource, known, p);
    if (refused.length === 0) out.accepted.push(p);
    else out.quarantined.push({ ...identity(p, idMember), reasons: refused.map(refusalReason), payload: p });
  }
  return out;
}

export function identity(payload: unknown, idMember = 'id'): { id: string | null; updatedAt: string | null } {
  return { id: stringMember(payload, idMember), updatedAt: stringMember(payload, 'updated_at') };
}

/** Keeps records out, replacing what was kept of an earlier version of each. */
export async function quarantine(
  tx: SqlRunner,
  resource: string,
  records: readonly KeptOut[],
  at: Micros,
): Promise<void> {
  for (const r of records) {
    await tx.run(`DELETE FROM _sync_quarantine WHERE resource = $1 AND record_id IS NOT DISTINCT FROM $2`, [
      resource,
      r.id,
    ]);
    await tx.run(`INSERT INTO _sync_quarantine VALUES ($1, $2, $3, ${US_TO_TSTZ('$4')}, $5, $6)`, [
      resource,
      r.id,
      r.updatedAt,
      BigInt(at),
      listValue(r.reasons),
      r.hash,
    ]);
  }
}

/**
 * Takes records out of quarantine once the version stored is as new as the one kept out (a later
 * version loaded, or the kept one replayed); a record without updated_at, once any version loads. `stored`: SQL of the stored records (id, updated_at)
 * whose id is among those of a query.
 */
export async function release(
  tx: SqlRunner,
  resource: string,
  ids: readonly string[],
  stored: (ids: string) => string,
): Promise<void> {
  if (ids.length === 0) return;
  const list = 'SELECT unnest($2::VARCHAR[]) AS id';
  await tx.run(
    `DELETE FROM _sync_quarantine q USING ${stored(list)} s
     WHERE q.resource = $1 AND q.record_id = s.id
       AND (q.updated_at IS NULL OR s.updated_at >= TRY_CAST(q.updated_at AS TIMESTAMPTZ))`,
    [resource, listValue([...ids])],
  );
}

/** What is kept out of a resource now, as `id\0payload hash`. */
export async function quarantinedKeys(db: SqlRunner, resource: string): Promise<Set<string>> {
  const rows = await db.all<{ id: string | null; hash: string }>(
    `SELECT record_id AS id, payload_hash AS hash FROM _sync_quarantine WHERE resource = $1`,
    [resource],
  );
  return new Set(rows.map((r) => keyOf(r)));
}

export function keyOf(r: { id: string | null; hash: string }): string {
  return `${r.id ?? ''}\u0000${r.hash}`;
}

/** The records not kept out already: the same payload listed again is archived once. */
export async function notYetKeptOut(db: SqlRunner, resource: string, records: readonly KeptOut[]): Promise<KeptOut[]> {
  if (records.length === 0) return [];
  const known = await quarantinedKeys(db, resource);
  return records.filter((r) => !known.has(keyOf(r)));
}

/** Whether anything of a resource is kept out: most warehouses never quarantine anything. */
export async function anyQuarantined(db: SqlRunner, resource: string): Promise<boolean> {
  const [row] = await db.all<{ n: bigint }>(`SELECT count(*) AS n FROM _sync_quarantine WHERE resource = $1`, [
    resource,
  ]);
  return Number(row?.n ?? 0) > 0;
}

/** Quarantined records as raw archive rows. */
export function quarantinedRecords(
  records: readonly KeptOut[],
  fetchedAt: Micros,
  listedAt: Micros | null,
): ArchiveRecord[] {
  return records.map((r) => ({
    kind: QUARANTINED,
    id: r.id,
    updatedAt: r.updatedAt,
    fetchedAt,
    listedAt,
    payload: r.text,
  }));
}
