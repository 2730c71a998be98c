import type { ArchiveRecord } from '../archive/writer.ts';
import type { Micros } from '../util/timestamp.ts';
import { safeJsonText, stringMember } from './json-text.ts';
import { US_TO_TSTZ } from './sql.ts';
import type { SqlRunner } from './types.ts';

// Payloads the flattening refused are kept whole in _sync_rejected with the reason, in the same
// transaction as the rest of their batch, so a bad record costs neither the batch nor itself.

export interface RejectedPayload {
  /** The payload's id when it had a readable one. */
  id: string | null;
  reason: string;
}

/** A refused payload with its JSON text, as it is kept. */
export interface Refusal extends RejectedPayload {
  payload: string;
}

export function refusal(payload: unknown, reason: string, idMember = 'id'): Refusal {
  return { id: stringMember(payload, idMember), reason, payload: safeJsonText(payload) };
}

/** What a load tells its caller of its refusals (the payloads stay behind). */
export function reasons(refusals: readonly Refusal[]): RejectedPayload[] {
  return refusals.map(({ id, reason }) => ({ id, reason }));
}

export async function insertRejected(
  tx: SqlRunner,
  endpoint: string,
  refusals: readonly Refusal[],
  fetchedAt: Micros,
): Promise<void> {
  for (const r of refusals) {
    await tx.run(`INSERT INTO _sync_rejected VALUES ($1, $2, ${US_TO_TSTZ('$3')}, $4, $5)`, [
      endpoint,
      r.id,
      BigInt(fetchedAt),
      r.reason,
      r.payload,
    ]);
  }
}

/** Refusals as raw archive rows, so a later flattening that accepts them needs no re-fetch. */
export function rejectedRecords(
  refusals: readonly Refusal[],
  fetchedAt: Micros,
  listedAt: Micros | null,
): ArchiveRecord[] {
  return refusals.map((r) => ({
    kind: 'rejected',
    id: r.id,
    updatedAt: null,
    fetchedAt,
    listedAt,
    payload: r.payload,
  }));
}
