import type { Micros } from '../util/timestamp.ts';
import { US_TO_TSTZ } from './warehouse-sql.ts';
import type { SqlRunner } from './warehouse-types.ts';

// Payloads the flattening refused are kept whole in _sync_rejected with the reason, in the same
// transaction as the rest of their batch, so a bad record costs neither the batch nor itself.

export interface RejectedPayload {
  /** The payload's id when it had a readable one. */
  id: string | null;
  reason: string;
}

export async function insertRejected(
  tx: SqlRunner,
  endpoint: string,
  rejected: readonly RejectedPayload[],
  payloads: readonly string[],
  fetchedAt: Micros,
): Promise<void> {
  for (let i = 0; i < rejected.length; i++) {
    const r = rejected[i] as RejectedPayload;
    await tx.run(`INSERT INTO _sync_rejected VALUES ($1, $2, ${US_TO_TSTZ('$3')}, $4, $5)`, [
      endpoint,
      r.id,
      BigInt(fetchedAt),
      r.reason,
      payloads[i] ?? null,
    ]);
  }
}
