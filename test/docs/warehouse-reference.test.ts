import { readFile } from 'node:fs/promises';
import { beforeAll, describe, expect, it } from 'vitest';
import { type DescribedObject, renderWarehouseReference, typeName } from '../../src/resources/reference.ts';
import { BOOKKEEPING, type BookkeepingNote } from '../../src/resources/reference-notes.ts';
import { RUNS } from '../../src/resources/registry.ts';
import {
  freshWarehouseSchema,
  generateWarehouseReference,
  REFERENCE_FILE,
} from '../support/gen-warehouse-reference.ts';

// docs/warehouse.md is generated from the registry, views.sql and a migrated warehouse. It must be
// what they generate now, and every table and column it lists must exist, with that type, in a
// warehouse migrated from nothing by runsync's own open and migrate: so the page can drift neither
// from the declarations nor from the DDL.

let fresh: DescribedObject[];
let page: string;

beforeAll(async () => {
  fresh = await freshWarehouseSchema();
  page = await readFile(REFERENCE_FILE, 'utf8');
});

/** The page's sections: each `### \`name\`` with the (column, type) rows of its table. */
function listed(markdown: string): Map<string, [string, string][]> {
  const out = new Map<string, [string, string][]>();
  let current: [string, string][] | null = null;
  for (const line of markdown.split('\n')) {
    const heading = /^### `([^`]+)`$/.exec(line);
    if (heading) {
      current = [];
      out.set(heading[1] as string, current);
    } else if (/^## /.test(line)) current = null;
    const row = /^\| `([^`]+)` \| ([^|]+?) \|/.exec(line);
    if (current && row) current.push([row[1] as string, row[2] as string]);
  }
  return out;
}

describe('docs/warehouse.md', () => {
  it('is what the registry, views.sql and the migrated warehouse generate', async () => {
    const generated = await generateWarehouseReference(fresh);
    expect(page, 'docs/warehouse.md is out of date: run `npm run docs:warehouse`').toBe(generated);
  });

  it('lists every table and view of a freshly migrated warehouse, each column with its type', () => {
    const sections = listed(page);
    for (const o of fresh) {
      const columns = sections.get(o.name);
      expect(columns, `${o.name} is missing from docs/warehouse.md`).toBeDefined();
      expect(
        columns,
        `${o.name}'s columns in docs/warehouse.md differ from the DDL: run \`npm run docs:warehouse\``,
      ).toEqual(o.columns.map((c) => [c.name, typeName(c.type)]));
    }
    const tables = new Set(fresh.map((o) => o.name));
    expect([...sections.keys()].filter((name) => !tables.has(name))).toEqual([]);
  });

  it('lists the contract tables with their keys', () => {
    for (const [name, key] of [
      ['runs', '`id`'],
      ['run_steps', '`run_id`, `id`'],
      ['run_tool_calls', '`run_id`, `id`'],
      ['tool_parameters', '`tool_id`, `name`'],
      ['agents_history', '`id`, `valid_from`'],
    ])
      expect(page).toMatch(new RegExp(`### \`${name}\`\\n\\n[^\\n]+\\n\\n- Key: ${key}[ .]`));
  });
});

describe('renderWarehouseReference', () => {
  const viewsSql = '';
  it('refuses a declared column without a meaning', () => {
    const bare = { ...RUNS, columns: RUNS.columns.map((c) => (c.name === 'status' ? { ...c, about: '' } : c)) };
    expect(() => renderWarehouseReference({ resources: [bare], database: [], viewsSql })).toThrow(
      /runs\.status has no description/,
    );
  });

  it('refuses a table of the warehouse that nothing describes', () => {
    const stray: DescribedObject = { name: '_sync_new', kind: 'table', columns: [], primaryKey: [] };
    expect(() => renderWarehouseReference({ resources: [], database: [stray], viewsSql })).toThrow(
      /not described anywhere: _sync_new/,
    );
  });

  it('refuses a bookkeeping column without a line in reference-notes.ts', () => {
    const audit = fresh.find((o) => o.name === '_sync_audit') as DescribedObject;
    const grown = { ...audit, columns: [...audit.columns, { name: 'deferred', type: 'JSON' }] };
    const bookkeeping = { _sync_audit: BOOKKEEPING._sync_audit as BookkeepingNote };
    expect(() =>
      renderWarehouseReference({ resources: [], database: [grown], viewsSql, bookkeeping, ledger: {} }),
    ).toThrow(/_sync_audit: deferred has no line in reference-notes.ts/);
  });
});
