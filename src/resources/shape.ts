import type { ColumnKind, ColumnSpec } from './types.ts';

// Resources declare their columns as the shape of the payload: a member's kind ('text',
// 'timestamptz!' when required, 'text[]' for a list) with what the column means for a reader of
// the warehouse, or the shape of a nested object whose scalar members become parent_member
// columns. The naming rule below names declared and newly seen members alike, so a member the API
// adds lands where a reader would look for it.

/** A member's kind and its meaning, as the warehouse reference (docs/warehouse.md) shows it. */
export type Member = readonly [kind: string, about: string];
export type MemberDecl = Member | Shape;
export interface Shape {
  readonly [member: string]: MemberDecl;
}

const KINDS: Record<string, ColumnKind> = {
  text: 'text',
  boolean: 'boolean',
  double: 'double',
  bigint: 'bigint',
  timestamptz: 'timestamptz',
  json: 'json',
  'text[]': 'text_list',
  'bigint[]': 'bigint_list',
  'double[]': 'double_list',
  'boolean[]': 'boolean_list',
};

// DuckDB's reserved keywords: a member named like one gets a column it can be used as unquoted.
const RESERVED = new Set(
  (
    'all analyse analyze and any array as asc asymmetric both case cast check collate column constraint create ' +
    'default deferrable desc describe distinct do else end except false fetch for foreign from group having in ' +
    'initially intersect into lambda lateral leading limit not null offset on only or order pivot pivot_longer ' +
    'pivot_wider placing primary qualify references returning select show some summarize symmetric table then ' +
    'to trailing true union unique unpivot using variadic when where window with'
  ).split(' '),
);

/** The column a member's value goes to: parent_member, lower case, letters, digits and underscores. */
export function columnName(path: readonly string[]): string {
  const parts = path.map(identifierPart);
  const leaf = parts[parts.length - 1] as string;
  const parents = parts.slice(0, -1);
  // trigger.trigger_message_type is trigger_message_type, not trigger_trigger_message_type.
  const last = parents[parents.length - 1];
  const name = [...(last !== undefined && leaf.startsWith(`${last}_`) ? parents.slice(0, -1) : parents), leaf].join(
    '_',
  );
  if (name === 'order') return 'ordinal';
  return RESERVED.has(name) ? `${name}_value` : name;
}

function identifierPart(member: string): string {
  const part = member
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .toLowerCase()
    .replace(/[^a-z0-9_]+/g, '_')
    .replace(/^_+|_+$/g, '');
  const safe = part === '' ? 'member' : part;
  return /^[0-9]/.test(safe) ? `_${safe}` : safe.slice(0, 60);
}

const isMember = (decl: MemberDecl): decl is Member => Array.isArray(decl);

/** The columns of a shape, in declaration order. A kind may name its column: 'text[] ticket_tags'. */
export function columnsOf(shape: Shape, parents: readonly string[] = []): ColumnSpec[] {
  const out: ColumnSpec[] = [];
  for (const [member, decl] of Object.entries(shape)) {
    const path = [...parents, member];
    if (!isMember(decl)) {
      out.push(...columnsOf(decl, path));
      continue;
    }
    const [spec, about] = decl;
    const [type = '', rename] = spec.split(' ');
    const required = type.endsWith('!');
    const kind = KINDS[required ? type.slice(0, -1) : type];
    if (kind === undefined) throw new Error(`unknown column kind ${JSON.stringify(spec)} at ${path.join('.')}`);
    out.push({ name: rename ?? columnName(path), kind, path, about, ...(required ? { required } : {}) });
  }
  return out;
}
