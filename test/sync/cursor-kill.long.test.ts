import { afterAll, describe, type ExpectStatic, it } from 'vitest';
import { formatTimestamp, MICROS_PER_DAY, MICROS_PER_HOUR } from '../../src/util/timestamp.ts';
import { openWarehouse, systemMicros } from '../../src/warehouse/index.ts';
import { collect, spawnCli } from '../support/cli.ts';
import { diffCatalog, diffWithTruth, startSim, tempDir, truth } from './kit.ts';

// `runsync sync` against an API whose cursors live 1 s, 5 s or 60 s, at 5 and 50 requests a second,
// killed with SIGKILL in the middle of its walk (at a checkpoint that is not its last) and started
// again: every pass that is not killed exits 0 and the warehouse ends equal to the simulator's
// truth. At 5 requests a second a list request waits behind the detail fetches for longer than a
// 1 s cursor lives, so that case goes through narrowed slices; a short-lived cursor saved by a
// killed pass is refused when the next pass picks it up. The list requests each case cost are
// printed.

// Three pages, all of one slice (a first sync walks its history a day at a time, from
// RUNSYNC_START_DATE): a lister that took the first two still has a cursor to hold.
const RUNS = 250;
/** The world's length: half a day, so the first day's slice holds every run. */
const DAYS = 0.5;
const KILLS = 2;

interface Case {
  ttlSeconds: number;
  rate: number;
}

interface Outcome extends Case {
  passes: number;
  kills: number;
  runs: number;
  listOk: number;
  listRefused: number;
  details: number;
  /** Restarts and narrowings logged, by every pass (killed or not). */
  restarts: number;
  narrowed: number;
  /** How each pass ended, and its wall time. */
  durations: string;
}

const CASES: Case[] = [
  { ttlSeconds: 1, rate: 5 },
  { ttlSeconds: 5, rate: 5 },
  { ttlSeconds: 60, rate: 5 },
  { ttlSeconds: 1, rate: 50 },
  { ttlSeconds: 5, rate: 50 },
  { ttlSeconds: 60, rate: 50 },
];

/** Restarts and narrowings recorded in _sync_audit by the passes that finished. */
async function audited(dir: string): Promise<{ restarts: number; narrowed: number }> {
  const wh = await openWarehouse(dir, { readOnly: true, lockWaitMs: 30_000 });
  try {
    const [r] = await wh.all<{ r: number | null; n: number | null }>(
      `SELECT sum(CAST(counts->>'$.runs.cursorRestarts' AS INTEGER)) AS r,
              sum(CAST(counts->>'$.runs.narrowed' AS INTEGER)) AS n
       FROM _sync_audit WHERE counts IS NOT NULL`,
    );
    return { restarts: Number(r?.r ?? 0), narrowed: Number(r?.n ?? 0) };
  } finally {
    await wh.close();
  }
}

const outcomes: Outcome[] = [];

/** Runs `fn` after every earlier call's `fn` has finished. */
function oneAtATime(): <T>(fn: () => Promise<T>) => Promise<T> {
  let tail: Promise<unknown> = Promise.resolve();
  return (fn) => {
    const run = tail.then(fn, fn);
    tail = run.catch(() => undefined);
    return run;
  };
}

describe('sync with short-lived cursors, killed mid-walk', () => {
  afterAll(() => {
    const rows = [...outcomes].sort((a, b) => a.rate - b.rate || a.ttlSeconds - b.ttlSeconds);
    console.log('cursor  rate  passes kills runs  list  refused  list/run  details/run  restarts  narrowed  passes');
    for (const o of rows) {
      console.log(
        `${`${o.ttlSeconds} s`.padEnd(7)} ${`${o.rate}/s`.padEnd(5)} ${String(o.passes).padStart(6)} ` +
          `${String(o.kills).padStart(5)} ${String(o.runs).padStart(4)} ${String(o.listOk).padStart(5)} ` +
          `${String(o.listRefused).padStart(8)} ${((o.listOk + o.listRefused) / o.runs).toFixed(3).padStart(9)} ` +
          `${(o.details / o.runs).toFixed(2).padStart(12)} ${String(o.restarts).padStart(9)} ` +
          `${String(o.narrowed).padStart(9)}  ${o.durations}`,
      );
    }
  });

  const busy = oneAtATime();
  const idle = <T>(fn: () => Promise<T>) => fn();
  it.concurrent.for(CASES)(
    'cursors of $ttlSeconds s at $rate requests/s',
    { timeout: 400_000 },
    ({ ttlSeconds, rate }, { expect }) =>
      // The 5/s cases mostly wait on their rate limit and run side by side; the 50/s ones, which
      // keep a core busy, one after another beside them.
      (rate >= 50 ? busy : idle)(() => runCase({ ttlSeconds, rate }, expect)),
  );
});

async function runCase({ ttlSeconds, rate }: Case, expect: ExpectStatic): Promise<void> {
  // The CLI cuts its windows by the real clock: the simulator stays behind it, and the lookback
  // covers the simulated time the test moves through.
  const sim = await startSim({
    seed: 90 + ttlSeconds + rate,
    size: RUNS,
    days: DAYS,
    now: systemMicros() - 2 * MICROS_PER_HOUR,
    runs: { postSettleFraction: 0 },
    cursorTtlMs: ttlSeconds * 1000,
    rateLimit: { perKey: { limit: rate, windowSeconds: 1 } },
  });
  const tmp = tempDir();
  try {
    const env = {
      RUNSYNC_API_URL: sim.url,
      RUNSYNC_API_KEY: sim.key,
      RUNSYNC_WAREHOUSE_DIR: tmp.dir,
      RUNSYNC_START_DATE: formatTimestamp(sim.clock.now() - DAYS * MICROS_PER_DAY),
      RUNSYNC_LOOKBACK: '4h',
      // Debug, for the walk's checkpoint lines the kills wait for.
      LOG_LEVEL: 'debug',
    };
    let kills = 0;
    let passes = 0;
    const durations: string[] = [];
    const logs: string[] = [];
    const pass = async (kill: boolean) => {
      // The Parquet export has nothing to do with paging: left out, to spare the CPU.
      const child = spawnCli(['sync', '--no-export'], env);
      passes++;
      const done = collect(child, 280_000);
      // Killed at a checkpoint of its walk that is not the last one: mid-walk, with a saved
      // cursor for the next pass to resume from (or refuse).
      let tail = '';
      if (kill) {
        child.stderr?.on('data', (d: Buffer) => {
          const lines = (tail + d.toString()).split('\n');
          tail = lines.pop() ?? '';
          if (lines.some((l) => l.includes('walk checkpoint committed') && l.includes('"done":false')))
            child.kill('SIGKILL');
        });
      }
      const t0 = Date.now();
      const r = await done;
      durations.push(`${r.signal ?? r.code}:${((Date.now() - t0) / 1000).toFixed(1)}s`);
      logs.push(r.stderr);
      return r;
    };
    // Passes are killed mid-walk until KILLS were (or one got through its walk: nothing is then
    // left to kill it in); then the clock moves and one more pass finds the new runs.
    while (kills < KILLS) {
      const r = await pass(true);
      if (r.signal === 'SIGKILL') kills++;
      else {
        expect(r.code, `pass ${passes}: ${r.stderr.slice(-3000)}`).toBe(0);
        break;
      }
    }
    sim.advance('20m');
    const last = await pass(false);
    expect(last.code, `pass ${passes}: ${last.stderr.slice(-3000)}`).toBe(0);
    expect(kills).toBeGreaterThan(0);
    expect(await diffWithTruth(sim, tmp.dir, sim.clock.now())).toEqual([]);
    expect(await diffCatalog(sim, tmp.dir)).toEqual([]);
    const a = await audited(tmp.dir);
    const logged = (what: RegExp) =>
      logs
        .join('\n')
        .split('\n')
        .filter((l) => l.includes('"level":"warn"') && what.test(l)).length;
    const restartLines = logged(/a list cursor is no longer accepted|reading it in halves/);
    const narrowLines = logged(/reading it in halves/);
    const runs = truth(sim, sim.clock.now()).size;
    const outcome: Outcome = {
      ttlSeconds,
      rate,
      passes,
      kills,
      runs,
      listOk: sim.counters.count('runs.list', 200),
      listRefused: sim.counters.count('runs.list', 400),
      details: sim.counters.count('runs.get', 200),
      durations: durations.join(' '),
      restarts: restartLines,
      narrowed: narrowLines,
    };
    outcomes.push(outcome);
    // Every refusal restarted the walk that got it, with one log line (a pass killed between
    // the two may miss it); the audit counts those of the passes that finished.
    expect(restartLines).toBeLessThanOrEqual(outcome.listRefused);
    expect(restartLines).toBeGreaterThanOrEqual(outcome.listRefused - kills);
    expect(a.restarts).toBeLessThanOrEqual(restartLines);
    // A list request waits its turn behind the detail requests in flight (8 at 5/s: 1.6 s), longer
    // than a 1 s cursor lives: this case cannot finish without narrowing.
    if (ttlSeconds === 1 && rate === 5) expect(narrowLines).toBeGreaterThan(0);
  } finally {
    await sim.close();
    tmp.cleanup();
  }
}
