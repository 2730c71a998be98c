import type { Micros } from '../util/timestamp.ts';
import { toJsonText } from './json-text.ts';
import { US_TO_TSTZ } from './sql.ts';
import type { SqlRunner } from './types.ts';

// Named values in _sync_state (watermarks, cursors, the time of the last complete listing).
// Written through the caller's runner, so inside a load they commit with its data.

export async function getState<T = unknown>(db: SqlRunner, key: string): Promise<T | undefined> {
  const rows = await db.all<{ value: string | null }>(
    `SELECT value::VARCHAR AS value FROM _sync_state WHERE key = $1`,
    [key],
  );
  const first = rows[0];
  return first && first.value !== null ? (JSON.parse(first.value) as T) : undefined;
}

export async function setState(db: SqlRunner, key: string, value: unknown, at: Micros): Promise<void> {
  await db.run(
    `INSERT INTO _sync_state VALUES ($1, $2::JSON, ${US_TO_TSTZ('$3')})
     ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
    [key, toJsonText(value), BigInt(at)],
  );
}
