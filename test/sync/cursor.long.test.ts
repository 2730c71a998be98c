import { describe, expect, it } from 'vitest';
import { runBackfill } from '../../src/sync/backfill.ts';
import { type PassResult, RESTARTS_BEFORE_NARROWING, type RunCounts, runPass } from '../../src/sync/index.ts';
import { createLogger } from '../../src/util/logger.ts';
import { MICROS_PER_DAY, parseTimestamp } from '../../src/util/timestamp.ts';
import { openWarehouse } from '../../src/warehouse/index.ts';
import { diffWithTruth, engineFor, NOW, perTest, SETTLE, spanStart } from './kit.ts';

// Cursors the API stops accepting in the middle of a walk, not only a saved one: the slice is read
// again (narrower when refusals repeat), the pass still ends ok and exact, every run's detail is
// fetched once, each restart is logged once and counted in the pass's audit row.

interface Warned {
  msg: string;
  fields: Record<string, unknown>;
}

/** A logger that keeps its warnings (the rest is silent). */
function keepWarnings(): { logger: ReturnType<typeof createLogger>; warned: Warned[] } {
  const warned: Warned[] = [];
  const logger = createLogger({
    level: 'warn',
    destination: {
      write(line: string) {
        const o = JSON.parse(line) as Record<string, unknown>;
        if (o.level === 'warn') warned.push({ msg: String(o.msg), fields: o });
        return true;
      },
    } as unknown as NodeJS.WritableStream,
  });
  return { logger, warned };
}

async function auditCounts(dir: string): Promise<RunCounts[]> {
  const wh = await openWarehouse(dir, { readOnly: true });
  try {
    const rows = await wh.all<{ c: string }>(`SELECT counts::VARCHAR AS c FROM _sync_audit ORDER BY started_at`);
    return rows.map((r) => (JSON.parse(r.c) as { runs: RunCounts }).runs);
  } finally {
    await wh.close();
  }
}

const restartLines = (w: Warned[]) => w.filter((x) => /cursor/.test(x.msg) && /reading/.test(x.msg));

describe('a cursor refused at any page', () => {
  const each = perTest();

  it('one that expires while the lister waits for the loads restarts the slice and fetches nothing twice', async () => {
    // A cursor lives 1 s; the lister may hold one page of work ahead of a pipeline one page deep,
    // so it waits with a cursor in hand while a page's 100 details are fetched at 50/s (2 s). The
    // runs are a day's, so the day's listing is four pages long.
    const sim = await each.sim({
      seed: 61,
      size: 400,
      days: 1,
      cursorTtlMs: 1000,
      rateLimit: { perKey: { limit: 50, windowSeconds: 1 } },
    });
    const dir = each.dir();
    const { logger, warned } = keepWarnings();
    const engine = engineFor({
      sim,
      dir: dir,
      logger,
      options: { settings: { listAheadRuns: 50, bufferedPages: 1 } },
    });
    let r: PassResult;
    try {
      r = await runPass(engine.deps);
    } finally {
      await engine.close();
    }
    expect(r.status).toBe('ok');
    expect(r.runs.cursorRestarts).toBeGreaterThan(0);
    expect(sim.counters.count('runs.list', 400)).toBe(r.runs.cursorRestarts);
    expect(restartLines(warned)).toHaveLength(r.runs.cursorRestarts);
    expect(await diffWithTruth(sim, dir, sim.clock.now() - SETTLE)).toEqual([]);
    // Every run's detail once: the runs of pages still in the pipeline were not asked for again.
    expect(sim.counters.count('runs.get', 200)).toBe(r.runs.fetched);
    expect(r.runs.fetched).toBe(r.runs.new);
    const [audit] = await auditCounts(dir);
    expect(audit?.cursorRestarts).toBe(r.runs.cursorRestarts);
    expect(audit?.narrowed).toBe(r.runs.narrowed);
    console.log(
      `cursor 1 s, lister held back: ${r.runs.cursorRestarts} restarts, ${r.runs.narrowed} narrowings, ` +
        `${sim.counters.count('runs.list')} list requests for ${r.runs.new} runs`,
    );
  });

  it('a server refusing every cursor: live window, open runs and reconciliation narrow, and stay exact', async () => {
    // Enough runs that the open ones of the second pass fill more than a page of their ticket
    // listing; the first pass keeps the open runs it finds created before its window.
    const sim = await each.sim({ seed: 64, size: 1200, cursorTtlMs: 0 });
    const dir = each.dir();
    const { logger, warned } = keepWarnings();
    const engine = engineFor({ sim, dir: dir, logger });
    const passes: PassResult[] = [];
    const details = () => sim?.counters.count('runs.get') ?? 0;
    try {
      passes.push(await runPass(engine.deps));
      const first = passes[0] as PassResult;
      expect(first.runs.narrowed).toBeGreaterThan(0);
      expect(first.runs.cursorRestarts).toBeGreaterThanOrEqual(first.runs.narrowed * (RESTARTS_BEFORE_NARROWING + 1));
      expect(details()).toBe(first.runs.new);
      // The open runs are re-checked by ticket, in listings of more than a page: refused too.
      sim.advance('1h');
      let before = details();
      passes.push(await runPass(engine.deps));
      const plain = passes[1] as PassResult;
      expect(plain.openRunsChecked).toBeGreaterThan(100);
      expect(plain.runs.narrowed).toBeGreaterThan(0);
      expect(details() - before).toBe(plain.runs.fetched);
      expect(await diffWithTruth(sim, dir, sim.clock.now() - SETTLE)).toEqual([]);
      // The reconciliation re-lists the whole horizon under the same refusals.
      sim.advance('2d');
      before = details();
      passes.push(await runPass(engine.deps, { reconcile: true }));
      const rec = passes[2] as PassResult;
      expect(rec.runs.narrowed).toBeGreaterThan(0);
      expect(details() - before).toBe(rec.runs.fetched);
      expect(await diffWithTruth(sim, dir, sim.clock.now() - SETTLE)).toEqual([]);
    } finally {
      await engine.close();
    }
    expect(passes.map((p) => p.status)).toEqual(['ok', 'ok', 'ok']);
    expect(restartLines(warned)).toHaveLength(passes.reduce((a, p) => a + p.runs.cursorRestarts, 0));
    const audit = await auditCounts(dir);
    expect(audit.map((a) => a.narrowed)).toEqual(passes.map((p) => p.runs.narrowed));
    for (const p of passes) {
      console.log(
        `every cursor refused, ${p.kind}: ${p.runs.pages} pages + ${p.runs.cursorRestarts} refused for ` +
          `${p.runs.listed} summaries, ${p.runs.narrowed} narrowings, ${p.runs.new} new runs`,
      );
    }
  });

  it('a backfill under refused cursors narrows the same way and loads its range exactly', async () => {
    const sim = await each.sim({ seed: 63, size: 400, cursorTtlMs: 0 });
    const dir = each.dir();
    const engine = engineFor({ sim, dir: dir });
    const to = parseTimestamp(NOW) as number;
    try {
      const r = await runBackfill(engine.deps, {
        from: spanStart(sim),
        to,
        filter: {},
        force: false,
        sliceMicros: 5 * MICROS_PER_DAY,
      });
      expect(r.status).toBe('ok');
      expect(r.runs.narrowed).toBeGreaterThan(0);
      expect(sim.counters.count('runs.get')).toBe(r.runs.new);
      const [audit] = await auditCounts(dir);
      expect(audit?.cursorRestarts).toBe(r.runs.cursorRestarts);
    } finally {
      await engine.close();
    }
    expect(await diffWithTruth(sim, dir, to)).toEqual([]);
  });
});
