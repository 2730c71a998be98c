import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { listArchiveFiles } from '../../src/archive/paths.ts';
import { RUNS } from '../../src/resources/registry.ts';
import { type Micros, parseTimestamp } from '../../src/util/timestamp.ts';
import { flattenRunDetail } from '../../src/warehouse/flatten-run.ts';
import { loadRunDetails } from '../../src/warehouse/load-runs.ts';
import { openWarehouse } from '../../src/warehouse/open.ts';
import type { SqlRunner, Warehouse } from '../../src/warehouse/types.ts';
import { runDetail } from './run-fixture.ts';
import { clone, count, dumpAll, simDetails, tempDir } from './wh-kit.ts';

let tmp: ReturnType<typeof tempDir>;
let wh: Warehouse;
let clock = parseTimestamp('2026-03-01T00:00:00Z') as Micros;
beforeEach(async () => {
  tmp = tempDir();
  wh = await openWarehouse(join(tmp.dir, 'w'), { now: () => (clock += 1000) });
});
afterEach(async () => {
  await wh.close();
  tmp.cleanup();
});

/** Rows as the warehouse holds them, in the shape flattenRunDetail gives. */
async function readRows(db: SqlRunner, table: string, where = 'true'): Promise<Record<string, unknown>[]> {
  const cols = await db.all<{ name: string; type: string }>(
    `SELECT column_name AS name, data_type AS type FROM information_schema.columns
     WHERE table_name = $1 ORDER BY ordinal_position`,
    [table],
  );
  const exprs = cols.map((c) =>
    c.type.startsWith('TIMESTAMP')
      ? `epoch_us("${c.name}") AS "${c.name}"`
      : c.type === 'DATE' || c.type === 'JSON'
        ? `"${c.name}"::VARCHAR AS "${c.name}"`
        : `"${c.name}"`,
  );
  const rows = await db.all<Record<string, unknown>>(`SELECT ${exprs.join(', ')} FROM ${table} WHERE ${where}`);
  return rows.map((r) => {
    const out: Record<string, unknown> = {};
    for (const c of cols) {
      const v = r[c.name];
      out[c.name] = typeof v === 'bigint' && Number.isSafeInteger(Number(v)) ? Number(v) : v;
    }
    return out;
  });
}

function normalise(row: Record<string, unknown>, jsonCols: readonly string[]): Record<string, unknown> {
  const out = { ...row };
  for (const c of jsonCols) if (typeof out[c] === 'string') out[c] = JSON.parse(out[c] as string);
  return out;
}

const RUN_JSON = ['approval_pending_params'];
const STEP_JSON = ['tool_input', 'tool_output'];

describe('loading run details', () => {
  it('stores exactly what flattenRunDetail gives, for simulator runs and hand-made edge cases', async () => {
    const details: Record<string, unknown>[] = [
      ...simDetails(31, 120),
      runDetail({
        id: 'edge-nulls',
        agent: null,
        category: null,
        resolution: null,
        trigger: {},
        ticket: { id: 'チケット-1', title: '', url: null },
      }),
      runDetail({
        id: 'edge-json',
        trigger: { ticket_tags: [], is_messaging_ticket: true, timestamp: '' },
        conversation: [
          { id: 'old', order: 1, recorded_at: '1969-12-31T23:59:59.999999Z' },
          { id: 'leap', order: 2, recorded_at: '2024-02-29T23:59:59.999999-01:00' },
        ],
        approval: {
          waiting_for_approval: true,
          pending: {
            step_id: null,
            tool_id: null,
            tool_name: null,
            tool_type: null,
            params: { deep: [[[[{ a: null }]]]], emoji: '👩‍👩‍👧‍👦' },
            redacted: true,
            truncated: false,
          },
        },
        steps: [
          {
            id: 's',
            order: 7,
            timestamp: '2026-02-11T00:00:00.000001+05:30',
            type: 'new_kind',
            title: 'x',
            content: "'; DROP TABLE runs; --",
            status: 'odd',
            duration_seconds: 0,
            tool: {
              name: 'n',
              type: 't',
              input: { big: 2 ** 53 + 2, s: 'tab\there' },
              output: [1, 'x', null, true],
              redacted: false,
              truncated: true,
              error: null,
            },
          },
        ],
      }),
    ];
    const result = await loadRunDetails(wh, details);
    expect(result).toMatchObject({
      received: details.length,
      inserted: details.length,
      updated: 0,
      stale: 0,
      rejected: [],
    });

    for (const d of details) {
      const want = flattenRunDetail(d);
      const [run] = await readRows(wh, 'runs', `id = '${String(d.id).replace(/'/g, "''")}'`);
      const { fetched_at: _f, payload_hash: _h, is_deleted, deleted_at, ...stored } = run as Record<string, unknown>;
      // What runsync adds to a run it loaded: not deleted.
      expect([is_deleted, deleted_at]).toEqual([false, null]);
      expect(normalise(stored, RUN_JSON), String(d.id)).toEqual(normalise(want.run, RUN_JSON));
      for (const child of RUNS.children) {
        const rows = await readRows(wh, child.table, `run_id = '${String(d.id).replace(/'/g, "''")}' ORDER BY rowid`);
        const jsonCols = child.table === 'run_steps' ? STEP_JSON : [];
        expect(
          rows.map((r) => normalise(r, jsonCols)),
          `${d.id} ${child.table}`,
        ).toEqual((want.children[child.table] ?? []).map((r) => normalise(r, jsonCols)));
      }
    }
    expect(result.childRows).toBe(
      await count(
        wh,
        `SELECT (SELECT count(*) FROM run_messages) + (SELECT count(*) FROM run_steps)
              + (SELECT count(*) FROM run_evaluations)`,
      ),
    );
    expect(await count(wh, `SELECT count(*) FROM run_tool_calls WHERE type <> 'tool_call'`)).toBe(0);
    expect(await count(wh, `SELECT count(*) FROM run_tool_calls`)).toBe(
      await count(wh, `SELECT count(*) FROM run_steps WHERE type = 'tool_call'`),
    );
  });

  it('keeps JSON integers beyond 2^53 exact (DuckDB reads the archived text, no JavaScript number)', async () => {
    const d = runDetail({
      steps: [
        {
          id: 's',
          order: 1,
          tool: {
            name: 'n',
            type: 't',
            input: { id: 12345678901234567891n },
            output: { v: 2n ** 63n - 1n },
            redacted: false,
            truncated: false,
            error: null,
          },
        },
      ],
    });
    await loadRunDetails(wh, [d]);
    const [row] = await wh.all<{ a: string; b: string }>(
      `SELECT (tool_input->>'id') AS a, (tool_output->'v')::HUGEINT::VARCHAR AS b FROM run_steps`,
    );
    expect(row).toEqual({ a: '12345678901234567891', b: '9223372036854775807' });
  });

  it('keeps huge, deep and odd JSON whole through DuckDB', async () => {
    let deep: unknown = { leaf: true };
    for (let i = 0; i < 1000; i++) deep = i % 2 ? [deep] : { n: deep };
    const odd = {
      '': 'empty key',
      'ключ 🔑': 'ünïcödé',
      nul: 'a\u0000b',
      // A lone surrogate never gets this far: the client mends it as a response is read.
      pair: '🙂',
      quote: '"\\\'',
      nums: [0, -0.5, 1e21, 5e-324],
      huge: 'h'.repeat(3_000_000),
      deep,
    };
    const d = runDetail({
      steps: [
        {
          id: 's',
          order: 1,
          tool: {
            name: 'n',
            type: 't',
            input: odd,
            output: [odd.huge, null],
            redacted: false,
            truncated: false,
            error: null,
          },
        },
      ],
    });
    expect((await loadRunDetails(wh, [d])).inserted).toBe(1);
    const [row] = await wh.all<{ i: string; o: string; len: bigint }>(
      `SELECT tool_input::VARCHAR AS i, tool_output::VARCHAR AS o, length(tool_output->>'$[0]') AS len FROM run_steps`,
    );
    expect(JSON.parse(row?.i ?? 'null')).toEqual(odd);
    expect(row?.len).toBe(3_000_000n);
    expect(JSON.parse(row?.o ?? 'null')).toEqual([odd.huge, null]);
  });

  it('merges a batch too large for the memory limit again with more, then restores the limit', async () => {
    const small = await openWarehouse(join(tmp.dir, 'small'), { memoryLimit: '16MB' });
    try {
      const [before] = await small.all<{ m: string }>(`SELECT current_setting('memory_limit') AS m`);
      const huge = 'h'.repeat(4_000_000);
      const d = runDetail({
        steps: [
          {
            id: 's',
            order: 1,
            tool: {
              name: 'n',
              type: 't',
              input: { huge },
              output: [huge, huge],
              redacted: false,
              truncated: false,
              error: null,
            },
          },
        ],
      });
      const r = await loadRunDetails(small, [d]);
      expect(r).toMatchObject({ inserted: 1, rejected: [] });
      expect(r.archiveFile).not.toBeNull();
      expect(await small.all(`SELECT current_setting('memory_limit') AS m`)).toEqual([before]);
      expect(await small.all(`SELECT count(*) AS n FROM run_steps WHERE id = 's'`)).toEqual([{ n: 1n }]);
      expect(before?.m).toBe('15.2 MiB');
    } finally {
      await small.close();
    }
  });

  it('is idempotent: loading the same batch again changes nothing and archives nothing', async () => {
    const details = simDetails(32, 80);
    const first = await loadRunDetails(wh, details);
    const before = await dumpAll(wh);
    const files = (await listArchiveFiles(wh.dir, 'runs')).length;
    const second = await loadRunDetails(wh, details);
    expect(second).toMatchObject({
      inserted: 0,
      updated: 0,
      unchanged: details.length,
      childRows: 0,
      archiveFile: null,
    });
    expect(await dumpAll(wh)).toEqual(before);
    expect((await listArchiveFiles(wh.dir, 'runs')).length).toBe(files);
    expect(first.archiveFile).not.toBeNull();
  });

  it('never lets an older payload overwrite a newer one, to the microsecond', async () => {
    const older = runDetail({ updated_at: '2026-02-11T08:00:00.000001Z', status: 'running' });
    const newer = runDetail({ updated_at: '2026-02-11T08:00:00.000002Z', status: 'completed' });
    await loadRunDetails(wh, [newer]);
    const r = await loadRunDetails(wh, [older]);
    expect(r).toMatchObject({ stale: 1, inserted: 0, updated: 0, archiveFile: null });
    expect(await wh.all(`SELECT status, epoch_us(updated_at) AS u FROM runs`)).toEqual([
      { status: 'completed', u: 1770796800000002n },
    ]);
    const r2 = await loadRunDetails(wh, [runDetail({ updated_at: '2026-02-11T08:00:00.000003Z', status: 'failed' })]);
    expect(r2.updated).toBe(1);
    expect(await wh.all(`SELECT status FROM runs`)).toEqual([{ status: 'failed' }]);
  });

  it('resolves duplicates inside one batch before the merge: the newest wins whatever the order', async () => {
    const a = runDetail({ updated_at: '2026-02-11T09:00:00Z', status: 'running', steps: [] });
    const b = runDetail({ updated_at: '2026-02-11T10:00:00Z', status: 'completed' });
    const r = await loadRunDetails(wh, [b, a, a]);
    expect(r).toMatchObject({ received: 3, inserted: 1, duplicates: 2 });
    expect(await wh.all(`SELECT status FROM runs`)).toEqual([{ status: 'completed' }]);
    expect(await count(wh, `SELECT count(*) FROM run_steps`)).toBe(2);
  });

  it('replaces a run’s children as a whole: a step that disappeared upstream disappears', async () => {
    const v1 = runDetail();
    await loadRunDetails(wh, [v1, runDetail({ id: 'other' })]);
    const v2 = clone(v1);
    v2.updated_at = '2026-02-12T00:00:00Z';
    v2.steps = (v1.steps as unknown[]).slice(1);
    v2.conversation = [];
    v2.evaluation_attributes = [
      ...(v1.evaluation_attributes as unknown[]),
      {
        id: 'e2',
        attribute_id: 'a2',
        name: 'Tone',
        description: '',
        value: 'neutral',
        recorded_at: '2026-02-12T00:00:00Z',
      },
    ];
    await loadRunDetails(wh, [v2]);
    expect(await wh.all(`SELECT id FROM run_steps WHERE run_id = 'run-1' ORDER BY ordinal`)).toEqual([{ id: 's2' }]);
    expect(await count(wh, `SELECT count(*) FROM run_messages WHERE run_id = 'run-1'`)).toBe(0);
    expect(await wh.all(`SELECT id FROM run_evaluations WHERE run_id = 'run-1' ORDER BY id`)).toEqual([
      { id: 'e1' },
      { id: 'e2' },
    ]);
    expect(await count(wh, `SELECT count(*) FROM run_steps WHERE run_id = 'other'`)).toBe(2);
  });

  it('takes other content with the same updated_at when fetched later, not when fetched earlier', async () => {
    await loadRunDetails(wh, [runDetail({ status: 'completed' })], { fetchedAt: 2_000_000 });
    expect((await loadRunDetails(wh, [runDetail({ status: 'cancelled' })], { fetchedAt: 1_000_000 })).unchanged).toBe(
      1,
    );
    expect(await wh.all(`SELECT status FROM runs`)).toEqual([{ status: 'completed' }]);
    expect((await loadRunDetails(wh, [runDetail({ status: 'failed' })], { fetchedAt: 3_000_000 })).updated).toBe(1);
    expect(await wh.all(`SELECT status, epoch_us(fetched_at) AS f FROM runs`)).toEqual([
      { status: 'failed', f: 3_000_000n },
    ]);
  });

  it('keeps one state per updated_at in runs_history, and closes it when a newer one comes', async () => {
    const history = () =>
      wh.all(`SELECT status, epoch_us(valid_from) AS f, epoch_us(valid_to) AS t FROM runs_history ORDER BY valid_from`);
    await loadRunDetails(wh, [runDetail({ status: 'running' })], { fetchedAt: 2_000_000 });
    await loadRunDetails(wh, [runDetail({ status: 'running' })], { fetchedAt: 2_500_000 });
    await loadRunDetails(wh, [runDetail({ status: 'failed' })], { fetchedAt: 3_000_000 });
    const [first] = (await history()) as { f: bigint }[];
    expect(await history()).toEqual([{ status: 'failed', f: first?.f, t: null }]);
    const later = runDetail({ status: 'completed', updated_at: '2031-01-01T00:00:00Z' });
    await loadRunDetails(wh, [later], { fetchedAt: 4_000_000 });
    const end = BigInt(Date.parse('2031-01-01T00:00:00Z')) * 1000n;
    expect(await history()).toEqual([
      { status: 'failed', f: first?.f, t: end },
      { status: 'completed', f: end, t: null },
    ]);
  });

  it('keeps a refused payload with its reason and loads the rest of the batch', async () => {
    const bad = runDetail({ id: 'bad', updated_at: 'yesterday' });
    const r = await loadRunDetails(wh, [runDetail(), bad]);
    expect(r.inserted).toBe(1);
    expect(r.rejected).toEqual([
      { id: 'bad', reason: 'updated_at: expected an RFC 3339 date-time, got the string "yesterday"' },
    ]);
    const [kept] = await wh.all<{ record_id: string; reason: string; payload: string }>(
      `SELECT record_id, reason, payload FROM _sync_rejected`,
    );
    expect(kept?.record_id).toBe('bad');
    expect(JSON.parse(kept?.payload ?? 'null')).toEqual(bad);
    const archived = await wh.all(`SELECT kind, id FROM read_parquet('${r.archiveFile}') ORDER BY seq`);
    expect(archived).toEqual([
      { kind: 'payload', id: 'run-1' },
      { kind: 'rejected', id: 'bad' },
    ]);
  });

  it('commits bookkeeping in the same transaction, and rolls the data back with it', async () => {
    await loadRunDetails(wh, [runDetail()], {
      bookkeeping: [[`INSERT INTO _sync_state VALUES ('watermark', '"t1"', now())`]],
    });
    expect(await wh.all(`SELECT value::VARCHAR AS v FROM _sync_state WHERE key = 'watermark'`)).toEqual([
      { v: '"t1"' },
    ]);

    const filesBefore = (await listArchiveFiles(wh.dir, 'runs')).length;
    await expect(
      loadRunDetails(wh, [runDetail({ id: 'run-2' })], {
        bookkeeping: async (tx) => {
          await tx.run(`UPDATE _sync_state SET value = '"t2"' WHERE key = 'watermark'`);
          throw new Error('cursor write failed');
        },
      }),
    ).rejects.toThrow('cursor write failed');
    expect(await wh.all(`SELECT id FROM runs`)).toEqual([{ id: 'run-1' }]);
    expect(await wh.all(`SELECT value::VARCHAR AS v FROM _sync_state WHERE key = 'watermark'`)).toEqual([
      { v: '"t1"' },
    ]);
    expect((await listArchiveFiles(wh.dir, 'runs')).length).toBe(filesBefore);
    const leftovers = readdirSync(join(wh.dir, 'raw', 'runs'), { recursive: true }).filter((f) =>
      String(f).endsWith('.tmp'),
    );
    expect(leftovers).toEqual([]);
  });

  it('marks the created_date partitions it changed for the next export', async () => {
    await loadRunDetails(wh, [runDetail(), runDetail({ id: 'r2', created_at: '2026-02-09T00:00:00Z' })]);
    expect(
      await wh.all(`SELECT DISTINCT table_name, created_date::VARCHAR AS d FROM _sync_export_dirty ORDER BY d`),
    ).toEqual([
      { table_name: 'runs', d: '2026-02-09' },
      { table_name: 'runs', d: '2026-02-10' },
    ]);
  });

  it('lets a second batch prepare while the first merges, and both land', async () => {
    const details = simDetails(33, 60);
    const [a, b] = await Promise.all([loadRunDetails(wh, details.slice(0, 30)), loadRunDetails(wh, details.slice(25))]);
    expect(a.inserted + b.inserted).toBe(details.length);
    expect(await count(wh, `SELECT count(*) FROM runs`)).toBe(details.length);
  });
});
