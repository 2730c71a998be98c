import { listValue } from '@duckdb/node-api';
import { ArchiveWriter } from '../archive/archive-writer.ts';
import type { Micros } from '../util/timestamp.ts';
import { appendRows } from './append-rows.ts';
import { flattenToolOption } from './flatten-catalog.ts';
import { PayloadError, type Row } from './flatten-values.ts';
import { canonicalJsonText, toJsonText } from './json-text.ts';
import { insertRejected, type RejectedPayload } from './load-rejected.ts';
import { runBookkeeping } from './warehouse-sql.ts';
import type { Bookkeeping, SqlRunner, Warehouse } from './warehouse-types.ts';

// The tool-options endpoint returns the whole list in one response, so a load replaces
// run_tool_options when the list differs from what is stored, unless a later fetch is already
// stored. When an item is refused the list is not whole: rows are then only added or updated.

export interface ToolOptionsLoadOptions {
  fetchedAt?: Micros;
  bookkeeping?: Bookkeeping;
}

export interface ToolOptionsLoadResult {
  received: number;
  changed: boolean;
  stale: boolean;
  rejected: RejectedPayload[];
  archiveFile: string | null;
}

export async function loadToolOptions(wh: Warehouse, options: readonly unknown[], opts: ToolOptionsLoadOptions = {}): Promise<ToolOptionsLoadResult> {
  const fetchedAt = opts.fetchedAt ?? wh.now();
  const byName = new Map<string, { row: Row; payload: string }>();
  const rejected: RejectedPayload[] = [];
  const rejectedPayloads: string[] = [];
  for (const o of options) {
    try {
      const row = flattenToolOption(o);
      byName.set(row.tool_name as string, { row, payload: toJsonText(o) });
    } catch (e) {
      if (!(e instanceof PayloadError)) throw e;
      const name = o !== null && typeof o === 'object' ? (o as Record<string, unknown>).tool_name : undefined;
      rejected.push({ id: typeof name === 'string' ? name : null, reason: e.message });
      rejectedPayloads.push(toJsonText(o));
    }
  }
  return wh.transaction(async (tx) => {
    const result = await applyToolOptions(tx, wh, [...byName.values()], { whole: rejected.length === 0, fetchedAt, archive: true, rejected, rejectedPayloads });
    await insertRejected(tx, 'tool-options', rejected, rejectedPayloads, fetchedAt);
    await runBookkeeping(tx, opts.bookkeeping);
    return { ...result, received: options.length, rejected };
  });
}

export interface ApplyToolOptions {
  whole: boolean;
  fetchedAt: Micros;
  archive: boolean;
  rejected?: RejectedPayload[];
  rejectedPayloads?: string[];
}

export async function applyToolOptions(
  tx: SqlRunner,
  wh: Warehouse,
  items: readonly { row: Row; payload: string }[],
  o: ApplyToolOptions,
): Promise<Omit<ToolOptionsLoadResult, 'received' | 'rejected'>> {
  const current = await tx.all<{ tool_name: string; display_name: string | null; run_count: bigint | null; f: bigint }>(
    `SELECT tool_name, display_name, run_count, epoch_us(fetched_at) AS f FROM run_tool_options`,
  );
  const latest = current.reduce((m, r) => Math.max(m, Number(r.f)), -Infinity);
  if (latest > o.fetchedAt) return { changed: false, stale: true, archiveFile: null };
  const key = (name: unknown, label: unknown, count: unknown) => canonicalJsonText([name, label, count === null ? null : String(count)]);
  const before = new Set(current.map((r) => key(r.tool_name, r.display_name, r.run_count)));
  const after = items.map((i) => key(i.row.tool_name, i.row.display_name, i.row.run_count));
  const same = o.whole ? before.size === after.length && after.every((k) => before.has(k)) : after.every((k) => before.has(k));
  const hasRejected = (o.rejected?.length ?? 0) > 0;
  if (same && !hasRejected) return { changed: false, stale: false, archiveFile: null };

  if (!same) {
    if (o.whole) await tx.run(`DELETE FROM run_tool_options`);
    else await tx.run(`DELETE FROM run_tool_options WHERE tool_name IN (SELECT unnest($1))`, [listValue(items.map((i) => i.row.tool_name as string))]);
    await appendRows(tx, 'run_tool_options', items.map((i) => i.row), { fetched_at: o.fetchedAt });
    await tx.run(`INSERT INTO _sync_export_dirty VALUES ('run_tool_options', NULL)`);
  }
  let archiveFile: string | null = null;
  if (o.archive) {
    const archive = await ArchiveWriter.open(wh.dir, 'tool-options', wh.now());
    try {
      for (const i of items) await archive.append({ kind: 'payload', id: i.row.tool_name as string, updatedAt: null, fetchedAt: o.fetchedAt, listedAt: null, payload: i.payload });
      for (let k = 0; k < (o.rejected?.length ?? 0); k++) {
        await archive.append({ kind: 'rejected', id: o.rejected?.[k]?.id ?? null, updatedAt: null, fetchedAt: o.fetchedAt, listedAt: null, payload: o.rejectedPayloads?.[k] ?? 'null' });
      }
      archiveFile = await archive.commit();
    } catch (e) {
      await archive.abort();
      throw e;
    }
  }
  return { changed: !same, stale: false, archiveFile };
}
