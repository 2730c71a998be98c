import { describe, expect, it } from 'vitest';
import { AGENTS, RESOURCES, RUNS } from '../../src/resources/registry.ts';
import { applyChanges, planChanges } from '../../src/resources/schema-evolve.ts';
import { MAX_MEMBERS, mergeObserved, observe, observeAll } from '../../src/resources/schema-observe.ts';
import { columnName, columnsOf } from '../../src/resources/shape.ts';
import { createTableSql, tablesOf } from '../../src/resources/tables.ts';
import type { ResourceSpec } from '../../src/resources/types.ts';
import { runDetail } from '../warehouse/run-fixture.ts';

// The pure rules of the resource declarations and of schema evolution: how members are named,
// which type a new member gets and how it widens, when an array becomes a table, and how the
// ledger of changes rebuilds the schema in force.

const plan = (r: ResourceSpec, payloads: unknown[]) => planChanges(r, observeAll(r, payloads));
/** The changes as lines, in the order they are made (a member's order in the payload). */
const brief = (r: ResourceSpec, payloads: unknown[]) =>
  plan(r, payloads).map((c) => `${c.change} ${c.table}${c.column ? `.${c.column}` : ''} ${c.kind ?? ''}`.trim());

describe('member naming', () => {
  it('names nested members parent_member, without repeating a parent already in the name', () => {
    expect(columnName(['ticket', 'id'])).toBe('ticket_id');
    expect(columnName(['approval', 'pending', 'step_id'])).toBe('approval_pending_step_id');
    expect(columnName(['trigger', 'trigger_message_type'])).toBe('trigger_message_type');
    expect(columnName(['mcp', 'mcp_tool_name'])).toBe('mcp_tool_name');
  });

  it('gives members that are SQL words, odd characters or camel case a usable column name', () => {
    expect(columnName(['order'])).toBe('ordinal');
    expect(columnName(['group'])).toBe('group_value');
    expect(columnName(['costUSD'])).toBe('cost_usd');
    expect(columnName(['x-y z'])).toBe('x_y_z');
    expect(columnName(['9lives'])).toBe('_9lives');
    expect(columnName(['"; DROP TABLE runs; --'])).toBe('drop_table_runs');
    expect(columnName(['☃'])).toBe('member');
  });

  it('reads a declaration as columns in order, with required members, renames and meanings', () => {
    const shape = {
      id: ['text!', 'the id'],
      tags: ['text[] labels', 'tags'],
      meta: { size: ['bigint', 'bytes'] },
    } as const;
    expect(columnsOf(shape)).toEqual([
      { name: 'id', kind: 'text', path: ['id'], about: 'the id', required: true },
      { name: 'labels', kind: 'text_list', path: ['tags'], about: 'tags' },
      { name: 'meta_size', kind: 'bigint', path: ['meta', 'size'], about: 'bytes' },
    ]);
    expect(() => columnsOf({ x: ['varchar', 'x'] })).toThrow(/unknown column kind/);
  });

  it('derives every table of every resource, the history tables with their version columns', () => {
    const names = RESOURCES.flatMap((r) => tablesOf(r).map((t) => t.name));
    expect(names).toEqual(
      expect.arrayContaining(['runs', 'run_steps', 'run_tool_calls', 'tools_history', 'tool_parameters_history']),
    );
    const history = tablesOf(AGENTS).find((t) => t.name === 'agents_history');
    expect(history?.columns.slice(-4).map((c) => c.name)).toEqual([
      'content_hash',
      'valid_from',
      'valid_to',
      'is_deleted',
    ]);
    expect(createTableSql(tablesOf(RUNS)[0] as never)).toMatch(
      /^CREATE TABLE IF NOT EXISTS "runs" \(\n {2}"id" VARCHAR NOT NULL,/,
    );
  });
});

describe('observed types', () => {
  it('infers a type per value and merges them the narrowest way both fit', () => {
    const t = (v: unknown) => observe(v).t;
    expect([t(true), t(3), t(2.5), t('x'), t('2026-03-01T10:00:00.123456Z'), t(null)]).toEqual([
      'boolean',
      'bigint',
      'double',
      'text',
      'timestamp',
      'null',
    ]);
    const m = (a: unknown, b: unknown) => mergeObserved(observe(a), observe(b)).t;
    expect(m(1, 1.5)).toBe('double');
    expect(m('2026-03-01T10:00:00Z', 'soon')).toBe('text');
    expect(m(null, 4)).toBe('bigint');
    expect(m('x', 4)).toBe('json');
    expect(m({ a: 1 }, 'x')).toBe('json');
  });

  it('keeps an object with more members than a record would have as one JSON value', () => {
    const map = Object.fromEntries(Array.from({ length: MAX_MEMBERS + 1 }, (_, i) => [`k${i}`, i]));
    expect(observe(map).t).toBe('json');
  });
});

describe('planning schema changes', () => {
  it('adds a typed column for each new scalar member of a run and of its steps', () => {
    const d = runDetail({ cost_usd: 0.25, steps: [{ id: 's1', order: 1, latency_ms: 12, retried: false }] });
    expect(brief(RUNS, [d])).toEqual([
      'column run_steps.latency_ms bigint',
      'column run_steps.retried boolean',
      'column runs.cost_usd double',
    ]);
  });

  it('ignores what it already stores, the object member, and members seen only as null', () => {
    expect(plan(RUNS, [runDetail({ object: 'run', later: null, steps: [{ id: 's', x: null }] })])).toEqual([]);
  });

  it('flattens a new object into parent_member columns and keeps deep or huge ones as JSON', () => {
    const d = runDetail({
      usage: { input_tokens: 10, model: { name: 'm', limits: { a: { b: 1 } } } },
      metadata: Object.fromEntries(Array.from({ length: MAX_MEMBERS + 5 }, (_, i) => [`k${i}`, 'v'])),
    });
    expect(brief(RUNS, [d])).toEqual([
      'column runs.usage_input_tokens bigint',
      'column runs.usage_model_name text',
      'column runs.usage_model_limits_a json',
      'column runs.metadata json',
    ]);
  });

  it('makes lists of scalar arrays, a table of a new array of objects on a run, JSON on a catalog object', () => {
    const d = runDetail({ labels: ['a', null], scores: [1, 2.5], citations: [{ url: 'u', rank: 1 }, { url: 'v' }] });
    expect(brief(RUNS, [d])).toEqual([
      'column runs.labels text_list',
      'column runs.scores double_list',
      'child-table run_citations',
      'column run_citations.url text',
      'column run_citations.rank bigint',
    ]);
    expect(brief(AGENTS, [{ id: 'a', escalations: [{ to: 'x' }] }])).toEqual(['column agents.escalations json']);
  });

  it('widens an evolved column when a later value needs it, and never a declared one', () => {
    const first = plan(RUNS, [runDetail({ cost: 3 })]);
    const evolved = applyChanges(RESOURCES, first).find((r) => r.table === 'runs') as ResourceSpec;
    expect(brief(evolved, [runDetail({ cost: 3.5 })])).toEqual(['widen runs.cost double']);
    expect(brief(evolved, [runDetail({ cost: 'n/a' })])).toEqual(['widen runs.cost json']);
    expect(brief(evolved, [runDetail({ cost: 4 })])).toEqual([]);
    expect(plan(RUNS, [runDetail({ duration_seconds: 'long' })])).toEqual([]);
  });

  it('never gives a new member the name of a column already there or of runsync’s own', () => {
    const d = runDetail({ ticket_id: 'T-1', payload_hash: 'x', steps: [{ id: 's', run_id: 'r' }] });
    expect(brief(RUNS, [d])).toEqual([
      'column run_steps.run_id_value text',
      'column runs.ticket_id_2 text',
      'column runs.payload_hash_value text',
    ]);
  });

  it('rebuilds the schema in force from the ledger, a new table keyed by its items’ position', () => {
    const changes = plan(RUNS, [runDetail({ citations: [{ url: 'u' }], cost_usd: 1.5 })]);
    const runs = applyChanges(RESOURCES, changes).find((r) => r.table === 'runs') as ResourceSpec;
    expect(runs.columns.at(-1)).toEqual({ name: 'cost_usd', kind: 'double', path: ['cost_usd'], evolved: true });
    const citations = runs.children.find((c) => c.table === 'run_citations');
    expect(citations).toMatchObject({ member: 'citations', parentKey: 'run_id', key: 'item_index' });
    expect(
      tablesOf(runs)
        .find((t) => t.name === 'run_citations')
        ?.columns.map((c) => c.name),
    ).toEqual(['run_id', 'item_index', 'url', 'created_date']);
    expect(applyChanges(RESOURCES, changes)).toEqual(applyChanges(applyChanges(RESOURCES, changes), changes));
  });
});
