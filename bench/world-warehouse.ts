import { cpSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../src/config/index.ts';
import { startSimulator } from '../src/simulator/index.ts';
import { createEngine, runPass } from '../src/sync/index.ts';
import { silentLogger } from '../src/util/logger.ts';
import { formatTimestamp, MICROS_PER_DAY, type Micros } from '../src/util/timestamp.ts';
import { rebuildInto } from '../src/warehouse/rebuild.ts';
import { declaredFingerprint } from '../src/warehouse/schema.ts';
import { rawArchive, worldsDir } from './scale-world.ts';

// A warehouse holding what the simulator's world shows at `now`, as a first sync would have left
// it, without the hours of API time a first sync of a million runs takes at a real rate limit:
// the details go straight from the generator into a raw archive (scale-world.ts), which `rebuild`
// turns into tables (the warehouse keeps no archive), then one pass against an unthrottled
// simulator lists every run (fetching nothing: all are stored) and leaves the bookkeeping and the
// Parquet tree a first sync leaves. Built once per world under the system temp folder; benches
// copy it.

export interface WorldSpec {
  seed: number;
  size: number;
  days: number;
  now: Micros;
}

function cacheDir(w: WorldSpec): string {
  // Named by the declared tables too: a warehouse built by a runsync with other tables (one
  // without runs_history) would measure passes against tables this one does not have.
  return join(worldsDir(), `w-rebuilt-${declaredFingerprint()}-${w.seed}-${w.size}-${w.days}-${w.now}`);
}

export function startDateOf(w: WorldSpec): string {
  return formatTimestamp(w.now - Math.ceil(w.days * MICROS_PER_DAY) - MICROS_PER_DAY);
}

async function build(w: WorldSpec, dir: string, log: (l: string) => void): Promise<void> {
  const raw = await rawArchive(w, log);
  const t0 = performance.now();
  const rebuilt = await rebuildInto(raw, dir, { logger: silentLogger() });
  log(`world ${w.size}: ${rebuilt.runs} runs rebuilt in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  const sim = await startSimulator({ port: 0, seed: w.seed, size: w.size, days: w.days, now: w.now });
  try {
    const config = loadConfig({
      RUNSYNC_API_URL: sim.url,
      RUNSYNC_API_KEY: sim.key,
      RUNSYNC_WAREHOUSE_DIR: dir,
      RUNSYNC_START_DATE: startDateOf(w),
    });
    const engine = createEngine(config, {
      logger: silentLogger(),
      signal: new AbortController().signal,
      now: () => sim.clock.now(),
    });
    try {
      const r = await runPass(engine.deps);
      log(`world ${w.size}: first pass listed ${r.runs.listed} runs, fetched ${r.runs.fetched}`);
    } finally {
      await engine.close();
    }
  } finally {
    await sim.close();
  }
}

/** A fresh copy of the world's warehouse in `target` (built first if it is not cached). */
export async function worldWarehouse(w: WorldSpec, target: string, log: (l: string) => void): Promise<void> {
  const cached = cacheDir(w);
  const done = join(cached, '.complete');
  if (!existsSync(done)) {
    rmSync(cached, { recursive: true, force: true });
    mkdirSync(cached, { recursive: true });
    log(`world ${w.size}: building its warehouse in ${cached} (once)`);
    await build(w, cached, log);
    writeFileSync(done, '');
  }
  cpSync(cached, target, { recursive: true, filter: (src) => src !== done });
}
