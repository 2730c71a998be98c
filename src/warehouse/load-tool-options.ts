import { listValue } from '@duckdb/node-api';
import type { ArchiveRecord } from '../archive/writer.ts';
import { observeAll } from '../resources/schema-observe.ts';
import type { Micros } from '../util/timestamp.ts';
import { appendRows } from './append-rows.ts';
import { flattenToolOption } from './flatten-catalog.ts';
import { PayloadError, type Row } from './flatten-values.ts';
import { canonicalJsonText, safeJsonText, toJsonText } from './json-text.ts';
import {
  insertRejected,
  type Refusal,
  type RejectedPayload,
  reasons,
  refusal,
  rejectedRecords,
} from './load-rejected.ts';
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
import { runBookkeeping } from './sql.ts';
import type { LoadOptions, SqlRunner, Warehouse } from './types.ts';

// The tool-options endpoint returns the whole list in one response, so a load replaces
// run_tool_options when the list differs from what is stored, unless a later fetch is already
// stored. When an item is refused the list is not whole: rows are then only added or updated.

export interface ToolOptionsLoadResult {
  received: number;
  changed: boolean;
  stale: boolean;
  rejected: RejectedPayload[];
  /** Items the schema contract kept out of a frozen table (in _sync_quarantine). */
  quarantined: QuarantinedRecord[];
  archiveFile: string | null;
}

export async function loadToolOptions(
  wh: Warehouse,
  options: readonly unknown[],
  { fetchedAt = wh.now(), bookkeeping }: LoadOptions = {},
): Promise<ToolOptionsLoadResult> {
  return wh.transaction(async (tx) => {
    const result = await applyToolOptions(tx, wh, options, { fetchedAt });
    await runBookkeeping(tx, bookkeeping);
    return { ...result, received: options.length };
  });
}

export interface ApplyToolOptions {
  fetchedAt: Micros;
}

/** Applies a fetched list inside the caller's transaction; refused items are recorded. */
export async function applyToolOptions(
  tx: SqlRunner,
  wh: Warehouse,
  options: readonly unknown[],
  o: ApplyToolOptions,
): Promise<Omit<ToolOptionsLoadResult, 'received'>> {
  const { accepted, quarantined } = splitByContract(wh, 'run_tool_options', options, 'tool_name');
  await evolveSchema(tx, wh, 'run_tool_options', observeAll(wh.resource('run_tool_options'), accepted), o.fetchedAt);
  const resource = wh.resource('run_tool_options');
  const byName = new Map<string, { row: Row; payload: string }>();
  const refused: Refusal[] = [];
  for (const option of accepted) {
    try {
      const row = flattenToolOption(option, resource);
      byName.set(row.tool_name as string, { row, payload: toJsonText(option) });
    } catch (e) {
      if (!(e instanceof PayloadError)) throw e;
      refused.push(refusal(option, e.message, 'tool_name'));
    }
  }
  await insertRejected(tx, 'tool-options', refused, o.fetchedAt);
  const kept = quarantined.map(({ payload, ...q }) => keptOut(q, safeJsonText(payload)));
  const newlyKept = await notYetKeptOut(tx, 'run_tool_options', kept);
  await quarantine(tx, 'run_tool_options', kept, o.fetchedAt);
  const items = [...byName.values()];
  // A list with items refused or kept out is not whole: what it lacks is not known to be gone.
  const whole = refused.length + kept.length === 0;
  const applied = await replaceList(tx, items, whole, o.fetchedAt);
  if (await anyQuarantined(tx, 'run_tool_options'))
    await release(
      tx,
      'run_tool_options',
      items.map((i) => i.row.tool_name as string),
      (list) =>
        `(SELECT tool_name AS id, NULL::TIMESTAMPTZ AS updated_at FROM run_tool_options WHERE tool_name IN (${list}))`,
    );
  const rejected = reasons(refused);
  const result = {
    ...applied,
    rejected,
    quarantined: kept.map(({ id, updatedAt, reasons }) => ({ id, updatedAt, reasons })),
  };
  const nothingNew = refused.length === 0 && newlyKept.length === 0;
  if (applied.stale || (!applied.changed && nothingNew)) return { ...result, archiveFile: null };
  const records: ArchiveRecord[] = items.map((i) => ({
    kind: 'payload',
    id: i.row.tool_name as string,
    updatedAt: null,
    fetchedAt: o.fetchedAt,
    listedAt: null,
    payload: i.payload,
  }));
  records.push(...rejectedRecords(refused, o.fetchedAt, null));
  records.push(...quarantinedRecords(newlyKept, o.fetchedAt, null));
  return { ...result, archiveFile: await wh.archive.write('tool-options', records) };
}

async function replaceList(
  tx: SqlRunner,
  items: readonly { row: Row }[],
  whole: boolean,
  fetchedAt: Micros,
): Promise<{ changed: boolean; stale: boolean }> {
  const current = await tx.all<{ tool_name: string; display_name: string | null; run_count: bigint | null; f: bigint }>(
    `SELECT tool_name, display_name, run_count, epoch_us(fetched_at) AS f FROM run_tool_options`,
  );
  const latest = current.reduce((m, r) => Math.max(m, Number(r.f)), -Infinity);
  if (latest > fetchedAt) return { changed: false, stale: true };
  const key = (name: unknown, label: unknown, count: unknown) =>
    canonicalJsonText([name, label, count === null ? null : String(count)]);
  const before = new Set(current.map((r) => key(r.tool_name, r.display_name, r.run_count)));
  const after = items.map((i) => key(i.row.tool_name, i.row.display_name, i.row.run_count));
  const same = whole
    ? before.size === after.length && after.every((k) => before.has(k))
    : after.every((k) => before.has(k));
  if (same) return { changed: false, stale: false };
  if (whole) await tx.run(`DELETE FROM run_tool_options`);
  else {
    await tx.run(`DELETE FROM run_tool_options WHERE tool_name IN (SELECT unnest($1))`, [
      listValue(items.map((i) => i.row.tool_name as string)),
    ]);
  }
  await appendRows(
    tx,
    'run_tool_options',
    items.map((i) => i.row),
    { fetched_at: fetchedAt },
  );
  await tx.run(`INSERT INTO _sync_export_dirty (table_name) VALUES ('run_tool_options')`);
  return { changed: true, stale: false };
}
