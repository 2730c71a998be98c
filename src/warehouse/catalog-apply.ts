import { childColumns } from '../resources/tables.ts';
import type { ResourceSpec } from '../resources/types.ts';
import { appendRows, createStageLike } from './append-rows.ts';
import type { CatalogPlan } from './catalog-plan.ts';
import type { Row } from './flatten-values.ts';
import { quoteIdent, tableColumns, US_TO_TSTZ } from './sql.ts';
import type { SqlRunner } from './types.ts';

// Writes a CatalogPlan: new versions and deletions into <table>_history (and the child table's
// history, tool_parameters_history for tools), the live table replaced row by row, unversioned
// columns updated in place, and the changed tables marked for the next Parquet export.

export async function applyCatalogPlan(tx: SqlRunner, resource: ResourceSpec, plan: CatalogPlan): Promise<void> {
  const table = resource.table;
  const history = `${table}_history`;
  const live = resource.columns.map((c) => c.name);
  const child = resource.children[0];
  const dirty = new Set<string>();
  const touched = child ? [table, history, child.table, `${child.table}_history`] : [table, history];

  if (plan.deletions.length) {
    await tx.run(`CREATE OR REPLACE TEMP TABLE _stage_del (id VARCHAR, at_us BIGINT)`);
    await appendRows(
      tx,
      '_stage_del',
      plan.deletions.map((d) => ({ id: d.id, at_us: d.at })),
    );
    await markDeleted(tx, history, resource.key);
    if (child) await markDeleted(tx, `${child.table}_history`, child.parentKey);
    await tx.run(`DELETE FROM ${table} WHERE ${resource.key} IN (SELECT id FROM _stage_del)`);
    if (child) await tx.run(`DELETE FROM ${child.table} WHERE ${child.parentKey} IN (SELECT id FROM _stage_del)`);
    await tx.run(`DROP TABLE _stage_del`);
    for (const t of touched) dirty.add(t);
  }

  if (plan.versions.length) {
    await createStageLike(tx, '_stage_hist', history);
    await appendRows(
      tx,
      '_stage_hist',
      plan.versions.map((v) => ({
        ...v.object.row,
        content_hash: v.object.contentHash,
        valid_from: v.validFrom,
        valid_to: null,
        is_deleted: false,
      })),
    );
    await tx.run(
      `UPDATE ${history} SET valid_to = s.valid_from FROM _stage_hist s
       WHERE ${history}.id = s.id AND ${history}.valid_to IS NULL`,
    );
    await tx.run(`INSERT INTO ${history} SELECT * FROM _stage_hist`);
    await tx.run(`DELETE FROM ${table} WHERE id IN (SELECT id FROM _stage_hist)`);
    const liveCols = live.map(quoteIdent).join(', ');
    await tx.run(`INSERT INTO ${table} (${liveCols}) SELECT ${liveCols} FROM _stage_hist`);
    if (child) {
      const childHistory = `${child.table}_history`;
      const parent = quoteIdent(child.parentKey);
      await createStageLike(tx, '_stage_chist', childHistory);
      const rows: Row[] = plan.versions.flatMap((v) =>
        v.object.children.map((p) => ({ ...p, valid_from: v.validFrom, valid_to: null, is_deleted: false })),
      );
      await appendRows(tx, '_stage_chist', rows);
      await tx.run(`UPDATE ${childHistory} SET valid_to = s.valid_from FROM _stage_hist s
                    WHERE ${childHistory}.${parent} = s.id AND ${childHistory}.valid_to IS NULL`);
      await tx.run(`INSERT INTO ${childHistory} SELECT * FROM _stage_chist`);
      await tx.run(`DELETE FROM ${child.table} WHERE ${parent} IN (SELECT id FROM _stage_hist)`);
      const cols = childColumns(child)
        .map((c) => quoteIdent(c.name))
        .join(', ');
      await tx.run(`INSERT INTO ${child.table} (${cols}) SELECT ${cols} FROM _stage_chist`);
      await tx.run(`DROP TABLE _stage_chist`);
    }
    await tx.run(`DROP TABLE _stage_hist`);
    for (const t of touched) dirty.add(t);
  }

  if (plan.touches.length) {
    await tx.run(`CREATE OR REPLACE TEMP TABLE _stage_touch (id VARCHAR, last_run_us BIGINT)`);
    await appendRows(
      tx,
      '_stage_touch',
      plan.touches.map((t) => ({ id: t.object.id, last_run_us: t.lastRunAt })),
    );
    const value = US_TO_TSTZ('s.last_run_us');
    await tx.run(`UPDATE ${table} SET last_run_at = ${value} FROM _stage_touch s WHERE ${table}.id = s.id`);
    await tx.run(
      `UPDATE ${history} SET last_run_at = ${value} FROM _stage_touch s
       WHERE ${history}.id = s.id AND ${history}.valid_to IS NULL`,
    );
    await tx.run(`DROP TABLE _stage_touch`);
    dirty.add(table).add(history);
  }

  for (const t of dirty) await tx.run(`INSERT INTO _sync_export_dirty (table_name) VALUES ($1)`, [t]);
}

/** Adds an is_deleted version repeating each current version of the staged ids, and closes the current one. */
async function markDeleted(tx: SqlRunner, history: string, key: string): Promise<void> {
  const at = US_TO_TSTZ('d.at_us');
  const cols = (await tableColumns(tx, history)).map((c) => c.name);
  const select = cols.map((c) =>
    c === 'valid_from' ? at : c === 'valid_to' ? 'NULL' : c === 'is_deleted' ? 'true' : `h.${quoteIdent(c)}`,
  );
  await tx.run(`INSERT INTO ${history} (${cols.map(quoteIdent).join(', ')})
                SELECT ${select.join(', ')} FROM ${history} h JOIN _stage_del d ON h.${key} = d.id
                WHERE h.valid_to IS NULL`);
  await tx.run(`UPDATE ${history} SET valid_to = ${at} FROM _stage_del d
                WHERE ${history}.${key} = d.id AND ${history}.valid_to IS NULL AND ${history}.valid_from < ${at}`);
}
