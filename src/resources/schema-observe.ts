import { parseStrictTimestamp } from '../util/timestamp.ts';
import type { ChildSpec, ColumnSpec, ResourceSpec } from './types.ts';

// What the API sent that the schema does not hold yet: a type tree of the members no column reads
// and of the values of columns added since their declaration (whose type may need widening). It
// is built while payloads are checked, merged over a batch the way DuckDB's
// json_group_structure merges, and turned into schema changes by schema-evolve.ts.

export type Observed =
  | { readonly t: 'null' | 'boolean' | 'bigint' | 'double' | 'timestamp' | 'text' | 'json' }
  | { readonly t: 'object'; readonly members: Map<string, Observed> }
  | { readonly t: 'array'; item: Observed };

const NULL: Observed = { t: 'null' };
const JSON_VALUE: Observed = { t: 'json' };
/** Members of one observed object beyond which it is kept as JSON (a map keyed by data, not a record). */
export const MAX_MEMBERS = 100;

/** The type tree of a value never seen before. */
export function observe(value: unknown, depth = 0): Observed {
  if (value === null || value === undefined) return NULL;
  switch (typeof value) {
    case 'boolean':
      return { t: 'boolean' };
    case 'number':
      return { t: Number.isInteger(value) ? 'bigint' : 'double' };
    case 'bigint':
      return { t: 'bigint' };
    case 'string':
      return { t: parseStrictTimestamp(value) === null ? 'text' : 'timestamp' };
  }
  if (depth > 8) return JSON_VALUE;
  if (Array.isArray(value)) {
    let item: Observed = NULL;
    for (const v of value) item = mergeObserved(item, observe(v, depth + 1));
    return { t: 'array', item };
  }
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length > MAX_MEMBERS) return JSON_VALUE;
  return { t: 'object', members: new Map(entries.map(([k, v]) => [k, observe(v, depth + 1)])) };
}

/** The narrowest type tree both fit in: numbers widen, timestamps widen to text, the rest to JSON. */
export function mergeObserved(a: Observed, b: Observed): Observed {
  if (a.t === 'null') return b;
  if (b.t === 'null' || a === b) return a;
  if (a.t === 'object' && b.t === 'object') {
    const members = new Map(a.members);
    for (const [k, v] of b.members) members.set(k, mergeObserved(members.get(k) ?? NULL, v));
    return members.size > MAX_MEMBERS ? JSON_VALUE : { t: 'object', members };
  }
  if (a.t === 'array' && b.t === 'array') return { t: 'array', item: mergeObserved(a.item, b.item) };
  if (a.t === b.t) return a;
  const pair = new Set([a.t, b.t]);
  if (pair.has('bigint') && pair.has('double')) return { t: 'double' };
  if (pair.has('timestamp') && pair.has('text')) return { t: 'text' };
  return JSON_VALUE;
}

/** Where the schema already reads: a column, a nested object, or a child table's items. */
export interface KnownNode {
  /** A member deliberately not stored. */
  ignored?: true;
  column?: ColumnSpec;
  members?: Map<string, KnownNode>;
  child?: { spec: ChildSpec; items: KnownNode };
}

function nodeOf(columns: readonly ColumnSpec[]): KnownNode {
  const root: KnownNode = { members: new Map() };
  for (const c of columns) {
    let node = root;
    for (const member of c.path.slice(0, -1)) {
      let next = node.members?.get(member);
      if (!next) {
        next = { members: new Map() };
        node.members?.set(member, next);
      }
      node = next;
    }
    node.members?.set(c.path[c.path.length - 1] as string, { column: c });
  }
  return root;
}

export function knownNode(resource: ResourceSpec): KnownNode {
  const root = nodeOf(resource.columns);
  for (const member of resource.ignored) root.members?.set(member, { ignored: true });
  for (const spec of resource.children)
    root.members?.set(spec.member, { child: { spec, items: nodeOf(spec.columns) } });
  return root;
}

/**
 * The parts of an object the schema does not hold yet, or null when there are none. Declared
 * columns are left to the payload check; evolved ones are observed, since a later value may need a
 * wider type.
 */
export function observeUnknown(value: unknown, node: KnownNode): Observed | null {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return null;
  let members: Map<string, Observed> | null = null;
  for (const [member, v] of Object.entries(value as Record<string, unknown>)) {
    const known = node.members?.get(member);
    let seen: Observed | null;
    if (known === undefined) seen = observe(v);
    else if (known.ignored) seen = null;
    else if (known.column) seen = known.column.evolved ? observe(v) : null;
    else if (known.child) seen = Array.isArray(v) ? observeItems(v, known.child.items) : null;
    else seen = observeUnknown(v, known);
    if (seen === null || seen.t === 'null') continue;
    members ??= new Map();
    members.set(member, seen);
  }
  return members ? { t: 'object', members } : null;
}

function observeItems(items: readonly unknown[], node: KnownNode): Observed | null {
  let item: Observed | null = null;
  for (const v of items) {
    const seen = observeUnknown(v, node);
    if (seen) item = item ? mergeObserved(item, seen) : seen;
  }
  return item ? { t: 'array', item } : null;
}

/** What a batch of payloads holds beyond a resource's schema, merged, or null. */
export function observeAll(resource: ResourceSpec, payloads: Iterable<unknown>): Observed | null {
  const known = knownNode(resource);
  let observed: Observed | null = null;
  for (const p of payloads) {
    const seen = observeUnknown(p, known);
    if (seen) observed = observed ? mergeObserved(observed, seen) : seen;
  }
  return observed;
}

const DUCK_TYPES: Record<string, Observed['t']> = {
  NULL: 'null',
  BOOLEAN: 'boolean',
  UBIGINT: 'bigint',
  BIGINT: 'bigint',
  HUGEINT: 'bigint',
  UHUGEINT: 'bigint',
  DOUBLE: 'double',
  VARCHAR: 'text',
};

/**
 * A type tree from DuckDB's json_group_structure: the same merge, done on DuckDB's threads over
 * many payloads, though it cannot tell an RFC 3339 timestamp from other text.
 */
export function fromDuckStructure(s: unknown): Observed {
  if (Array.isArray(s)) return { t: 'array', item: fromDuckStructure(s[0] ?? 'NULL') };
  if (s !== null && typeof s === 'object') {
    const entries = Object.entries(s as Record<string, unknown>);
    if (entries.length > MAX_MEMBERS) return JSON_VALUE;
    return { t: 'object', members: new Map(entries.map(([k, v]) => [k, fromDuckStructure(v)])) };
  }
  return { t: DUCK_TYPES[String(s)] ?? 'json' } as Observed;
}

/** A type tree as plain JSON: a type name, an object of members, or a one-item array. */
export type ObservedJson = string | { [member: string]: ObservedJson } | [ObservedJson];

export function observedToJson(o: Observed): ObservedJson {
  if (o.t === 'object') return Object.fromEntries([...o.members].map(([k, v]) => [k, observedToJson(v)]));
  if (o.t === 'array') return [observedToJson(o.item)];
  return o.t;
}

export function observedFromJson(j: ObservedJson): Observed {
  if (Array.isArray(j)) return { t: 'array', item: observedFromJson(j[0]) };
  if (typeof j === 'object') {
    return { t: 'object', members: new Map(Object.entries(j).map(([k, v]) => [k, observedFromJson(v)])) };
  }
  return { t: j } as Observed;
}
