import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Simulator, SimulatorOptions } from '../../src/simulator/index.ts';
import { runPass } from '../../src/sync/index.ts';
import { processAlive } from '../../src/util/process-alive.ts';
import type { Micros } from '../../src/util/timestamp.ts';
import { engineFor, startSim } from '../sync/kit.ts';

// One synced warehouse shared by the view, query and report tests of a test run: the simulator
// with its clock moving over a week, a pass after each move, so runs settle, agents get edited
// between passes (several versions in agents_history) and analytics.duckdb is written by the
// last pass's export. It is built once per vitest run (test files run in child processes of the
// same vitest process) under a directory named after that process; readers open it read-only.
// Tests that need the truth start a simulator with the same options and set its clock to the
// last pass's time: the simulator is deterministic.

export const FIXTURE_SIM: SimulatorOptions = { seed: 26, size: 500, days: 10, runs: { postSettleFraction: 0 } };
/** Clock moves before each pass after the first. */
const STEPS = ['1d', '2d', '3d'];

export interface ViewsFixture {
  /** The warehouse directory (runsync.duckdb, analytics.duckdb, parquet/). Read it, never write it. */
  dir: string;
  /** The simulator clock at each pass, in order. */
  passTimes: Micros[];
}

const PREFIX = 'runsync-views-fixture-';
const META = 'fixture.json';

export async function viewsFixture(): Promise<ViewsFixture> {
  const root = join(tmpdir(), `${PREFIX}${process.ppid}`);
  const deadline = Date.now() + 180_000;
  for (;;) {
    if (existsSync(join(root, META))) return JSON.parse(readFileSync(join(root, META), 'utf8')) as ViewsFixture;
    if (tryLock(`${root}.lock`)) {
      try {
        if (!existsSync(join(root, META))) await build(root);
      } finally {
        rmSync(`${root}.lock`, { recursive: true, force: true });
      }
      continue;
    }
    if (Date.now() > deadline) throw new Error(`the shared views warehouse ${root} was not built in time`);
    await sleep(200);
  }
}

/** Starts a simulator like the fixture's, its clock at the fixture's last pass: the truth. */
export async function fixtureTruth(fixture: ViewsFixture): Promise<Simulator> {
  const sim = await startSim(FIXTURE_SIM);
  sim.clock.set(fixture.passTimes[fixture.passTimes.length - 1] as Micros);
  return sim;
}

function tryLock(lock: string): boolean {
  try {
    mkdirSync(lock);
    writeFileSync(join(lock, 'pid'), String(process.pid));
    return true;
  } catch {
    // Held: by a live process (wait for it), or left by a dead one (take it over).
    const pid = Number(readFileSafe(join(lock, 'pid')));
    if (pid && !processAlive(pid)) rmSync(lock, { recursive: true, force: true });
    return false;
  }
}

async function build(root: string): Promise<void> {
  removeStale();
  // Built in place (analytics.duckdb names the Parquet files by absolute path); the metadata file,
  // written last, says it is complete.
  rmSync(root, { recursive: true, force: true });
  const sim = await startSim(FIXTURE_SIM);
  const engine = engineFor({ sim, dir: root });
  const passTimes: Micros[] = [];
  try {
    for (const step of [null, ...STEPS]) {
      if (step) sim.advance(step);
      // The Parquet export (and analytics.duckdb) once, at the end: it writes all that changed.
      const pass = await runPass(engine.deps, { export: step === STEPS[STEPS.length - 1] });
      if (pass.status !== 'ok') throw new Error(`a fixture pass ended ${pass.status}`);
      passTimes.push(sim.clock.now());
    }
  } finally {
    await engine.close();
    await sim.close();
  }
  const fixture: ViewsFixture = { dir: root, passTimes };
  writeFileSync(join(root, META), JSON.stringify(fixture));
}

// Fixtures of vitest runs that have ended: their process is gone, or (its id reused since) the
// fixture is hours old.
function removeStale(): void {
  for (const name of readdirSync(tmpdir())) {
    const m = new RegExp(`^${PREFIX}(\\d+)`).exec(name);
    if (!m || Number(m[1]) === process.ppid) continue;
    const path = join(tmpdir(), name);
    try {
      const old = Date.now() - statSync(path).mtimeMs > 6 * 3600_000;
      if (old || !processAlive(Number(m[1]))) rmSync(path, { recursive: true, force: true });
    } catch {
      // Removed meanwhile by another run's clean-up.
    }
  }
}

function readFileSafe(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}
