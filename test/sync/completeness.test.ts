import { describe, expect, it } from 'vitest';
import { statusLines } from '../../src/cli/commands/status.ts';
import type { Simulator } from '../../src/simulator/index.ts';
import { runBackfill } from '../../src/sync/backfill.ts';
import { runPass } from '../../src/sync/index.ts';
import { readStatus } from '../../src/sync/status.ts';
import { runVerify } from '../../src/sync/verify.ts';
import {
  formatTimestamp,
  MICROS_PER_DAY,
  MICROS_PER_HOUR,
  type Micros,
  parseTimestamp,
} from '../../src/util/timestamp.ts';
import { openWarehouse } from '../../src/warehouse/index.ts';
import { diffWithTruth, engineFor, NOW, perTest, SETTLE, spanStart } from './kit.ts';

// The completeness ledger against the simulator: passes fill it from what they list anyway (no
// request of its own), a gap made in the warehouse by hand shows in sync_completeness and in
// `status`, `verify --dry-run` names exactly that gap and changes nothing, `verify` fetches
// exactly it, and a day listed only in part gets no count from the API's side.

interface Day {
  day: string;
  listed_by: string | null;
  listed_runs: bigint | null;
  warehouse_runs: bigint;
  state: string;
}

async function read<T>(dir: string, sql: string): Promise<T[]> {
  const wh = await openWarehouse(dir, { readOnly: true });
  try {
    return await wh.all<T>(sql);
  } finally {
    await wh.close();
  }
}

async function write(dir: string, sql: string): Promise<void> {
  const wh = await openWarehouse(dir);
  try {
    await wh.run(sql);
  } finally {
    await wh.close();
  }
}

/** Runs gone from the warehouse with their child rows, as a lost write would leave it. */
async function removeRuns(dir: string, list: string): Promise<void> {
  const wh = await openWarehouse(dir);
  try {
    const children = await wh.all<{ t: string }>(
      `SELECT table_name AS t FROM duckdb_columns() c JOIN duckdb_tables() USING (table_name)
       WHERE column_name = 'run_id' AND NOT starts_with(table_name, '_')`,
    );
    for (const { t } of children) await wh.run(`DELETE FROM ${t} WHERE run_id IN (${list})`);
    await wh.run(`DELETE FROM runs WHERE id IN (${list})`);
  } finally {
    await wh.close();
  }
}

const days = (dir: string) =>
  read<Day>(
    dir,
    `SELECT CAST(day AS VARCHAR) AS day, listed_by, listed_runs, warehouse_runs, state FROM sync_completeness ORDER BY day`,
  );

/** The simulator's runs per UTC created day, created before `before`. */
function truthPerDay(sim: Simulator, before: Micros): Map<string, number> {
  const out = new Map<string, number>();
  for (const d of sim.world.truthRunDetails()) {
    const c = parseTimestamp(d.created_at as string) as Micros;
    if (c >= before) continue;
    const day = formatTimestamp(c).slice(0, 10);
    out.set(day, (out.get(day) ?? 0) + 1);
  }
  return out;
}

describe('the completeness ledger', () => {
  const each = perTest();

  it('is filled by passes at no request of its own; verify finds and repairs exactly a gap made by hand', async () => {
    const sim = await each.sim({ size: 400 });
    const dir = each.dir();
    const engine = engineFor({ sim, dir });
    try {
      // The first pass lists the last day but for its last seconds (the settle); the next one
      // finishes it.
      const passes = [await runPass(engine.deps)];
      sim.advance('1h');
      passes.push(await runPass(engine.deps));
      // Every list request is one the passes' walks counted; every detail one they loaded.
      const pages = passes.reduce((a, p) => a + p.listPages.live + p.listPages.open + p.listPages.reconcile, 0);
      expect(sim.counters.count('runs.list')).toBe(pages);
      expect(sim.counters.count('runs.get')).toBe(passes.reduce((a, p) => a + p.runs.fetched, 0));

      const want = truthPerDay(sim, sim.clock.now() - SETTLE);
      const ledger = await days(dir);
      const today = NOW.slice(0, 10);
      const whole = ledger.filter((d) => d.day !== today);
      expect(whole.length).toBe(10);
      for (const d of whole) {
        expect(d.state).toBe('agree');
        expect(Number(d.listed_runs)).toBe(want.get(d.day));
      }
      // The first sync listed every day but the last; the second pass's reconciliation step listed
      // them again, and its live window finished the last.
      expect(whole.map((d) => d.listed_by)).toEqual([...Array(9).fill('reconcile'), 'sync']);
      expect(ledger.find((d) => d.day === today)?.state).toBe('current');
      expect(await read(dir, `SELECT * FROM sync_completeness_issues`)).toEqual([]);
      // What stays staged is of days a listing has yet to finish: here the last one.
      const staged = `SELECT * FROM _sync_listed WHERE created_us < ${spanStart(sim) + 9 * MICROS_PER_DAY}`;
      expect(await read(dir, staged)).toEqual([]);

      // A gap: three runs of one day gone, one run of another day put back an hour.
      const [gapDay, staleDay] = [whole[2]?.day as string, whole[5]?.day as string];
      const gone = (
        await read<{ id: string }>(dir, `SELECT id FROM runs WHERE created_date = DATE '${gapDay}' ORDER BY id LIMIT 3`)
      ).map((r) => r.id);
      const [old] = await read<{ id: string }>(
        dir,
        `SELECT id FROM runs WHERE created_date = DATE '${staleDay}' ORDER BY id LIMIT 1`,
      );
      const staleId = old?.id as string;
      const list = gone.map((id) => `'${id}'`).join(', ');
      await removeRuns(dir, list);
      await write(dir, `UPDATE runs SET updated_at = updated_at - INTERVAL 1 HOUR WHERE id = '${staleId}'`);

      const issues = await read<{ day: string; state: string }>(
        dir,
        `SELECT CAST(day AS VARCHAR) AS day, state FROM sync_completeness_issues ORDER BY day`,
      );
      expect(issues).toEqual([
        { day: gapDay, state: 'disagree' },
        { day: staleDay, state: 'disagree' },
      ]);
      const n = want.get(gapDay) as number;
      const status = await (async () => {
        const wh = await openWarehouse(dir, { readOnly: true });
        try {
          const r = await readStatus(wh, sim.clock.now());
          return { r, lines: statusLines(wh.file, r, sim.clock.now()) };
        } finally {
          await wh.close();
        }
      })();
      expect(status.r.completeness.disagree).toBe(2);
      const line = status.lines.find((l) => l.startsWith('completeness'));
      expect(line).toContain('all 10 days verified within');
      expect(line).toContain(`2 disagree: ${gapDay} (API ${n}, warehouse ${n - 3}), ${staleDay}`);

      // The dry run names exactly the gap, fetches nothing and changes nothing.
      const before = await read(dir, `SELECT * FROM _sync_completeness ORDER BY day`);
      const stored = await read(dir, `SELECT id, updated_at FROM runs ORDER BY id`);
      const range = { from: spanStart(sim), to: spanStart(sim) + 10 * MICROS_PER_DAY };
      const detailsBefore = sim.counters.count('runs.get');
      const dry = await runVerify(engine.deps, { ...range, dryRun: true });
      expect(dry.status).toBe('ok');
      expect(dry.diff).toMatchObject({ missing: 3, stale: 1, unlisted: 0 });
      expect(dry.diff?.examples.missing).toEqual([...gone].sort());
      expect(dry.diff?.examples.stale).toEqual([staleId]);
      expect(sim.counters.count('runs.get')).toBe(detailsBefore);
      expect(await read(dir, `SELECT * FROM _sync_completeness ORDER BY day`)).toEqual(before);
      expect(await read(dir, `SELECT id, updated_at FROM runs ORDER BY id`)).toEqual(stored);
      expect(await read(dir, `SELECT * FROM _sync_listed WHERE stream = 'verify'`)).toEqual([]);

      // verify fetches exactly those four and the days agree again.
      const fixed = await runVerify(engine.deps, { ...range, dryRun: false });
      expect(fixed.status).toBe('ok');
      expect(sim.counters.count('runs.get') - detailsBefore).toBe(4);
      expect(fixed.days).toBe(10);
      expect(await diffWithTruth(sim, dir, sim.clock.now() - SETTLE)).toEqual([]);
      const after = await days(dir);
      expect(after.filter((d) => d.day !== today).every((d) => d.state === 'agree')).toBe(true);
      expect(await read(dir, `SELECT * FROM sync_completeness_issues`)).toEqual([]);
    } finally {
      await engine.close();
    }
  });

  it('gives no count from the API side to a day listed only in part, nor to a filtered listing', async () => {
    const sim = await each.sim({ size: 300 });
    const dir = each.dir();
    const engine = engineFor({ sim, dir });
    const start = spanStart(sim);
    try {
      // Noon of day 1 to noon of day 3: only day 2 is listed whole.
      const spec = {
        from: start + MICROS_PER_DAY + 12 * MICROS_PER_HOUR,
        to: start + 3 * MICROS_PER_DAY + 12 * MICROS_PER_HOUR,
        filter: {},
        force: false,
        sliceMicros: 6 * MICROS_PER_HOUR,
      };
      await runBackfill(engine.deps, spec, { export: false });
      const ledger = await days(dir);
      const day = (k: number) => formatTimestamp(start + k * MICROS_PER_DAY).slice(0, 10);
      expect(ledger.map((d) => [d.day, d.state, d.listed_runs === null])).toEqual([
        [day(1), 'unverified', true],
        [day(2), 'agree', false],
        [day(3), 'unverified', true],
      ]);
      // A backfill of some runs only says nothing of the days it walks.
      await runBackfill(
        engine.deps,
        {
          ...spec,
          from: start + 4 * MICROS_PER_DAY,
          to: start + 6 * MICROS_PER_DAY,
          filter: { status: ['completed'] },
        },
        { export: false },
      );
      const listed = await read<{ day: string }>(
        dir,
        `SELECT CAST(day AS VARCHAR) AS day FROM _sync_completeness ORDER BY day`,
      );
      expect(listed).toEqual([{ day: day(2) }]);
    } finally {
      await engine.close();
    }
  });
});
