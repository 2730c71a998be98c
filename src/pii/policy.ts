import { createHash } from 'node:crypto';
import { load } from 'js-yaml';
import { RESOURCES } from '../resources/registry.ts';
import type { ChildSpec, ColumnSpec, ResourceSpec } from '../resources/types.ts';
import { type CustomPattern, createDetectors } from './detect.ts';
import { createHasher } from './hash.ts';
import { Live } from './matcher.ts';
import { MAX_SEGMENTS, parsePath, type Segment } from './paths.ts';
import { PII_ACTIONS, type PiiAction, type PiiPolicy, type PiiRule, type ResourceRules } from './types.ts';

// A policy file (YAML or JSON) read and checked against the declared tables: every problem is
// reported, one line each, naming the file and where in it (config/pii.ts adds the setting). The
// file:
//
//   patterns:                 # optional: more for redact, by the placeholder they leave
//     order_number: 'ORD-[0-9]{6,}'
//   tables:
//     runs:
//       trigger_customer_name: hash          # a column: keep, hash, redact or drop
//       approval_pending_params:             # a JSON column: rules by path inside it
//         $..email: hash
//         $: redact
//       $.customer.email: hash               # a member no column is declared for (yet)
//
// Keys, timestamps the sync compares and the members a row cannot be stored without are never the
// policy's: a rule on one is refused. Of two rules that reach the same value, the earlier decides.

export const POLICY_SETTING = 'RUNSYNC_PII_POLICY';
export const KEY_SETTING = 'RUNSYNC_PII_KEY';

/** Bumped when applying a policy changes, so archive files written before are applied again. */
const APPLY_VERSION = 1;

export interface CompileOptions {
  /** The HMAC key; needed when a rule hashes. */
  key: Buffer | null;
  /** Where the policy came from, for messages: `default` or a path. */
  source: string;
}

export interface TableTarget {
  resource: ResourceSpec;
  child: ChildSpec | null;
  columns: readonly ColumnSpec[];
}

function tableTargets(): Map<string, TableTarget> {
  const out = new Map<string, TableTarget>();
  for (const r of RESOURCES) {
    out.set(r.table, { resource: r, child: null, columns: r.columns });
    for (const c of r.children) out.set(c.table, { resource: r, child: c, columns: c.columns });
  }
  return out;
}

/** What is wrong with a policy, one line each, starting with where the policy came from. */
export class PolicyError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(problems.join('\n'));
  }

  override get name(): string {
    return 'PolicyError';
  }
}

/** Parses and checks policy text; throws a PolicyError listing every problem. */
export function parsePolicy(text: string, options: CompileOptions): PiiPolicy {
  let doc: unknown;
  try {
    doc = load(text);
  } catch (e) {
    const reason = (e as Error).message.split('\n')[0];
    throw policyError(options.source, [`is not YAML or JSON: ${reason}`]);
  }
  const problems: string[] = [];
  const policy = compile(doc, options, problems);
  if (problems.length) throw policyError(options.source, problems);
  return policy as PiiPolicy;
}

function policyError(source: string, problems: readonly string[]): PolicyError {
  return new PolicyError(problems.map((p) => `${source}: ${p}`));
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function compile(doc: unknown, options: CompileOptions, problems: string[]): PiiPolicy | null {
  if (!isRecord(doc)) {
    problems.push('must be a mapping with `tables` (and optionally `patterns`)');
    return null;
  }
  for (const k of Object.keys(doc))
    if (k !== 'tables' && k !== 'patterns' && k !== 'version')
      problems.push(`${k}: not a policy member (tables, patterns)`);
  const patterns = compilePatterns(doc.patterns, problems);
  const rules: PiiRule[] = [];
  if (doc.tables === undefined || doc.tables === null)
    problems.push('tables: missing; name the tables the policy covers');
  else if (!isRecord(doc.tables)) problems.push('tables: must map table names to their columns');
  else {
    const targets = tableTargets();
    for (const [table, columns] of Object.entries(doc.tables)) {
      const target = targets.get(table);
      if (!target) {
        problems.push(`tables.${table}: ${unknownTable(table, targets)}`);
        continue;
      }
      if (!isRecord(columns)) {
        problems.push(`tables.${table}: must map columns (or $ paths) to keep, hash, redact or drop`);
        continue;
      }
      for (const [name, value] of Object.entries(columns)) tableRules(table, target, name, value, rules, problems);
    }
  }
  const hashes = rules.filter((r) => r.action === 'hash');
  if (hashes.length && options.key === null) {
    problems.push(
      `hashes ${hashes[0]?.where}${hashes.length > 1 ? ` and ${hashes.length - 1} more` : ''}, but ${KEY_SETTING} ` +
        `(or ${KEY_SETTING}_FILE) is not set; give a secret of at least 16 characters`,
    );
  }
  if (problems.length) return null;
  return {
    source: options.source,
    fingerprint: fingerprint(rules, patterns),
    rules,
    resources: byResource(rules),
    detectors: createDetectors(patterns),
    hash: hashes.length && options.key ? createHasher(options.key) : null,
  };
}

function compilePatterns(value: unknown, problems: string[]): CustomPattern[] {
  if (value === undefined || value === null) return [];
  if (!isRecord(value)) {
    problems.push('patterns: must map placeholder names to regular expressions');
    return [];
  }
  const out: CustomPattern[] = [];
  for (const [name, source] of Object.entries(value)) {
    const where = `patterns.${name}`;
    if (!/^[a-z][a-z0-9_]*$/.test(name)) problems.push(`${where}: a name is lower-case letters, digits and _`);
    else if (['email', 'phone', 'card', 'iban', 'ip'].includes(name)) problems.push(`${where}: is built in already`);
    else if (typeof source !== 'string' || source === '') problems.push(`${where}: must be a regular expression`);
    else if (/\(\?<[^=!]/.test(source)) problems.push(`${where}: named groups are not allowed; use (?: … )`);
    else {
      try {
        if (new RegExp(`^(?:${source})$`, 'u').test('')) problems.push(`${where}: matches empty text`);
        else out.push({ name, source: `(?:${source})` });
      } catch (e) {
        problems.push(`${where}: not a regular expression: ${(e as Error).message}`);
      }
    }
  }
  return out;
}

function unknownTable(table: string, targets: ReadonlyMap<string, TableTarget>): string {
  if (table.endsWith('_history') && targets.has(table.slice(0, -'_history'.length)))
    return `name ${table.slice(0, -'_history'.length)}; its history follows it`;
  if (table === 'run_tool_calls') return 'is a view of run_steps; name run_steps';
  return `no such table${suggest(table, [...targets.keys()])}`;
}

function suggest(name: string, candidates: readonly string[]): string {
  let best: string | null = null;
  let bestDistance = Math.max(3, Math.floor(name.length / 3));
  for (const c of candidates) {
    const d = distance(name, c);
    if (d < bestDistance) {
      best = c;
      bestDistance = d;
    }
  }
  return best ? `; did you mean ${best}?` : '';
}

function distance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++)
      cur[j] = Math.min(
        (prev[j] as number) + 1,
        (cur[j - 1] as number) + 1,
        (prev[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    prev = cur;
  }
  return prev[b.length] as number;
}

const TEXTUAL = new Set(['text', 'json', 'text_list']);

/** Columns no policy may touch: keys, and what the sync compares or a row cannot be stored without. */
export function protectedColumn(target: Omit<TableTarget, 'columns'>, column: ColumnSpec): boolean {
  if (column.required) return true;
  if (target.child === null)
    return column.name === target.resource.key || ['created_at', 'updated_at'].includes(column.name);
  return column.name === target.child.key;
}

function tableRules(
  table: string,
  target: TableTarget,
  name: string,
  value: unknown,
  rules: PiiRule[],
  problems: string[],
): void {
  const where = `tables.${table}.${name}`;
  const add = (column: string | null, path: readonly Segment[], action: PiiAction, at: string) =>
    rules.push({ where: at, table, column, action, path, order: rules.length });
  if (name.startsWith('$')) {
    const path = memberPath(target, name, where, problems);
    const action = actionOf(value, where, problems);
    if (path && action) add(null, path, action, `${table} ${name}`);
    return;
  }
  const column = target.columns.find((c) => c.name === name);
  if (!column) {
    problems.push(
      `${where}: no such column in ${table}${suggest(
        name,
        target.columns.map((c) => c.name),
      )}`,
    );
    return;
  }
  if (protectedColumn(target, column)) {
    problems.push(`${where}: is a key or a member every row needs; a policy cannot change it`);
    return;
  }
  const base: Segment[] = column.path.map((m) => ({ k: 'member', name: m.toLowerCase() }));
  if (isRecord(value)) {
    if (column.kind !== 'json') {
      problems.push(`${where}: rules by path are for JSON columns; ${name} is ${column.kind}`);
      return;
    }
    for (const [pathText, action] of Object.entries(value)) {
      const at = `${where}.${pathText}`;
      const path = parsePath(pathText);
      const a = actionOf(action, at, problems);
      if (typeof path === 'string') problems.push(`${at}: ${path}`);
      else if (base.length + path.length > MAX_SEGMENTS)
        problems.push(`${at}: a path has at most ${MAX_SEGMENTS} parts`);
      else if (a) add(name, [...base, ...path], a, `${table}.${name} ${pathText}`);
    }
    return;
  }
  const action = actionOf(value, where, problems);
  if (!action) return;
  if ((action === 'hash' || action === 'redact') && !TEXTUAL.has(column.kind)) {
    problems.push(`${where}: ${action} is for text and JSON columns; ${name} is ${column.kind} (keep or drop it)`);
    return;
  }
  add(name, base, action, `${table}.${name}`);
}

/** A member path given at table level: it starts at a member that is neither protected nor a child table. */
function memberPath(target: TableTarget, text: string, where: string, problems: string[]): Segment[] | null {
  const path = parsePath(text);
  if (typeof path === 'string') {
    problems.push(`${where}: ${path}`);
    return null;
  }
  const first = path[0];
  if (first?.k !== 'member') {
    problems.push(`${where}: at table level a path starts with a member ($.name…); name columns for the rest`);
    return null;
  }
  const column = target.columns.find((c) => c.path.length === 1 && c.path[0]?.toLowerCase() === first.name);
  if (column && protectedColumn(target, column)) {
    problems.push(`${where}: reaches ${column.name}, a key or a member every row needs; a policy cannot change it`);
    return null;
  }
  const child =
    target.child === null ? target.resource.children.find((c) => c.member.toLowerCase() === first.name) : null;
  if (child) {
    problems.push(`${where}: reaches the items of ${child.table}; give its rules under tables.${child.table}`);
    return null;
  }
  return path;
}

function actionOf(value: unknown, where: string, problems: string[]): PiiAction | null {
  if (typeof value === 'string' && (PII_ACTIONS as readonly string[]).includes(value)) return value as PiiAction;
  problems.push(`${where}: must be keep, hash, redact or drop${typeof value === 'string' ? `, not "${value}"` : ''}`);
  return null;
}

function byResource(rules: readonly PiiRule[]): Map<string, ResourceRules> {
  const targets = tableTargets();
  const grouped = new Map<string, { root: PiiRule[]; children: Map<string, PiiRule[]> }>();
  for (const rule of rules) {
    const t = targets.get(rule.table) as TableTarget;
    let entry = grouped.get(t.resource.table);
    if (!entry) {
      entry = { root: [], children: new Map() };
      grouped.set(t.resource.table, entry);
    }
    if (t.child === null) entry.root.push(rule);
    else {
      const list = entry.children.get(t.child.member) ?? [];
      list.push(rule);
      entry.children.set(t.child.member, list);
    }
  }
  const out = new Map<string, ResourceRules>();
  for (const [table, g] of grouped) {
    out.set(table, {
      ...g,
      rootStart: Live.start(g.root),
      childStarts: new Map([...g.children].map(([m, r]) => [m, Live.start(r)])),
    });
  }
  return out;
}

function fingerprint(rules: readonly PiiRule[], patterns: readonly CustomPattern[]): string {
  const what = {
    v: APPLY_VERSION,
    rules: rules.map((r) => [r.table, r.path, r.action]),
    patterns: patterns.map((p) => [p.name, p.source]),
  };
  return createHash('sha256').update(JSON.stringify(what)).digest('hex').slice(0, 16);
}
