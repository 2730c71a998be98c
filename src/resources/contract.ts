import { RESOURCES } from './registry.ts';
import { planChanges, type SchemaChange } from './schema-evolve.ts';
import type { KnownNode, Observed } from './schema-observe.ts';
import { observeUnknown } from './schema-observe.ts';
import { SQL_TYPE } from './tables.ts';
import type { ResourceSpec } from './types.ts';

// What may happen to a table's columns when the API sends a member it has not sent before, or a
// value of another type than its column's (RUNSYNC_SCHEMA_CONTRACT), per resource or table:
// - evolve (the default): the member becomes a column, a column is widened to a type that holds
//   both (numbers to DOUBLE, a timestamp and text to VARCHAR, anything else to JSON);
// - freeze: the record that needs either is not loaded but quarantined (_sync_quarantine), and
//   kept in the raw archive, until the contract is widened and it is replayed;
// - discard: the record loads without the member (or without the value of the other type); the
//   member stays in the raw archive, from which a rebuild under evolve fills its column.
// A table not named follows its resource's mode, then the mode given alone.

export type ContractMode = 'evolve' | 'freeze' | 'discard';
const MODES: readonly ContractMode[] = ['evolve', 'freeze', 'discard'];
export const CONTRACT_SETTING = 'RUNSYNC_SCHEMA_CONTRACT';

export interface SchemaContract {
  /** The setting as given ('evolve' when unset). */
  readonly text: string;
  modeOf(resource: string, table: string): ContractMode;
  /** Whether some table of the resource is frozen: its records are then judged one by one. */
  freezes(resource: string): boolean;
}

export const EVOLVE: SchemaContract = contractOf('evolve', 'evolve', new Map());

function contractOf(text: string, fallback: ContractMode, named: ReadonlyMap<string, ContractMode>): SchemaContract {
  const owner = new Map<string, string>();
  for (const r of RESOURCES) {
    owner.set(r.table, r.table);
    for (const c of r.children) owner.set(c.table, r.table);
  }
  return {
    text,
    modeOf: (resource, table) => named.get(table) ?? named.get(resource) ?? fallback,
    freezes: (resource) =>
      (named.get(resource) ?? fallback) === 'freeze' ||
      [...named].some(([t, m]) => m === 'freeze' && owner.get(t) === resource),
  };
}

/** What is wrong with a contract's text, one line per entry (config/env.ts adds the setting). */
export class ContractError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(problems.join('\n'));
  }

  override get name(): string {
    return 'ContractError';
  }
}

/** RUNSYNC_SCHEMA_CONTRACT: `evolve`, `freeze`, `discard`, or entries such as `freeze,runs=evolve,run_steps=discard`. */
export function parseContract(raw: string | null | undefined): SchemaContract {
  const text = raw?.trim() ?? '';
  if (text === '') return EVOLVE;
  const tables = RESOURCES.flatMap((r) => [r.table, ...r.children.map((c) => c.table)]);
  const problems: string[] = [];
  let fallback: ContractMode | null = null;
  const named = new Map<string, ContractMode>();
  for (const entry of text.split(',').map((e) => e.trim())) {
    if (entry === '') continue;
    const [name, mode] = entry.includes('=') ? entry.split('=').map((s) => s.trim()) : [null, entry];
    if (!(MODES as readonly string[]).includes(mode ?? '')) {
      problems.push(`${entry}: the mode must be evolve, freeze or discard`);
      continue;
    }
    if (name === null || name === undefined) {
      if (fallback !== null) problems.push(`${entry}: a mode for every table is given twice`);
      fallback = mode as ContractMode;
    } else if (!tables.includes(name)) {
      problems.push(`${entry}: no table ${name}; name one of ${tables.join(', ')}`);
    } else if (named.has(name)) {
      problems.push(`${entry}: ${name} is given twice`);
    } else named.set(name, mode as ContractMode);
  }
  if (problems.length) throw new ContractError(problems);
  return contractOf(text, fallback ?? 'evolve', named);
}

/** The table a change falls under: a new child table's member lies in its parent. */
export function changedTable(resource: ResourceSpec, c: SchemaChange): string {
  return c.change === 'child-table' ? resource.table : c.table;
}

/**
 * The schema changes one payload needs that the contract refuses (they fall under a frozen table),
 * with the resource as it stands; empty when it may load.
 */
export function refusedChanges(
  contract: SchemaContract,
  resource: ResourceSpec,
  known: KnownNode,
  payload: unknown,
): SchemaChange[] {
  return refusedOf(contract, resource, observeUnknown(payload, known));
}

/** The same, from what was observed of the payload beyond the schema. */
export function refusedOf(contract: SchemaContract, resource: ResourceSpec, seen: Observed | null): SchemaChange[] {
  if (seen === null) return [];
  return planChanges(resource, seen).filter(
    (c) => contract.modeOf(resource.table, changedTable(resource, c)) === 'freeze',
  );
}

/** Why a change keeps a record out, for _sync_quarantine and the logs. */
export function refusalReason(c: SchemaChange): string {
  const type = c.kind ? SQL_TYPE[c.kind] : null;
  if (c.change === 'child-table') return `${c.path.join('.')} is a new array of objects (table ${c.table})`;
  if (c.change === 'widen')
    return `${c.table}.${c.column} changed type: a value needs ${type} where the column is ${c.previousKind ? SQL_TYPE[c.previousKind] : '?'}`;
  return `${c.table}.${c.column} is a new member (${type})`;
}
