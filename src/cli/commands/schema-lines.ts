import type { SchemaChange } from '../../resources/schema-evolve.ts';
import { SQL_TYPE } from '../../resources/tables.ts';
import type { StatusReport } from '../../sync/status.ts';

// What `runsync status` says of schema evolution: the columns and tables new API members became,
// widened types, the members held in the raw archive only (discarded, or evolution off), newest
// last; and the records the schema contract keeps out of frozen tables.

const SHOWN = 8;

function member(c: SchemaChange): string {
  if (c.change === 'child-table' || c.column === null) return `table ${c.table} (from ${c.path.join('.')})`;
  const type = c.kind ? ` ${SQL_TYPE[c.kind]}` : '';
  const widened = c.change === 'widen' && c.previousKind ? ` (was ${SQL_TYPE[c.previousKind]})` : '';
  return `${c.table}.${c.column ?? c.path.join('.')}${type}${widened}`;
}

function listed(changes: readonly SchemaChange[]): string {
  const last = changes.slice(-SHOWN).map(member);
  const more = changes.length - last.length;
  return `${more > 0 ? `${more} earlier, then ` : ''}${last.join(', ')}`;
}

export function schemaChangeLines(changes: readonly SchemaChange[]): string[] {
  const evolved = changes.filter((c) => c.change !== 'held');
  // A member held once and made a column since (evolution switched on) is no longer held.
  const made = new Set(evolved.map((c) => `${c.table}\u0000${c.path.join('.')}`));
  const held = changes.filter((c) => c.change === 'held' && !made.has(`${c.table}\u0000${c.path.join('.')}`));
  const lines: string[] = [];
  if (evolved.length) lines.push(`new columns   ${evolved.length} from new API members: ${listed(evolved)}`);
  if (held.length)
    lines.push(
      `held          ${held.length} new API member(s) kept in the raw archive only (the schema contract discards ` +
        `them, or RUNSYNC_SCHEMA_EVOLUTION=off): ${listed(held)}; \`runsync rebuild\` under evolve makes them columns`,
    );
  return lines;
}

export function quarantineLines(q: StatusReport['quarantine']): string[] {
  if (q.total === 0) return [];
  const by = Object.entries(q.byResource)
    .map(([r, n]) => `${r} ${n}`)
    .join(', ');
  const why = q.reasons.map((r) => `${r.reason} (${r.records})`).join('; ');
  return [
    `quarantined   ${q.total} record(s) the schema contract keeps out of frozen tables (${by}): ${why}; ` +
      'widen RUNSYNC_SCHEMA_CONTRACT, then `runsync quarantine replay`',
  ];
}
