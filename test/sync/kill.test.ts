import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Simulator } from '../../src/simulator/index.ts';
import { formatTimestamp, MICROS_PER_HOUR } from '../../src/util/timestamp.ts';
import { systemMicros } from '../../src/warehouse/index.ts';
import { collect, runCli, spawnCli } from '../support/cli.ts';
import { diffCatalog, diffWithTruth, spanStart, startSim, tempDir } from './kit.ts';

// `runsync sync` killed with SIGKILL at random points, restarted each time, and moved on: the
// warehouse still ends equal to the ground truth, nothing lost and nothing twice. The seed of the
// kill times is printed so a failure can be replayed (RUNSYNC_KILL_SEED=...).

function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 0x100000000;
  };
}

describe('a sync killed with SIGKILL and restarted', () => {
  let sim: Simulator;
  let tmp: ReturnType<typeof tempDir>;
  beforeAll(async () => {
    // The CLI cuts its windows by the real clock: the simulator stays behind it, and the lookback
    // covers the simulated time the test moves through.
    sim = await startSim({
      seed: 21,
      size: 500,
      now: systemMicros() - 2 * MICROS_PER_HOUR,
      runs: { postSettleFraction: 0 },
    });
    tmp = tempDir();
  });
  afterAll(async () => {
    await sim.close();
    tmp.cleanup();
  });

  it('resumes where it stopped and ends exact', async () => {
    const seed = Number(process.env.RUNSYNC_KILL_SEED ?? Math.floor(Math.random() * 1e9));
    console.log(`kill seed ${seed} (replay with RUNSYNC_KILL_SEED=${seed})`);
    const random = rng(seed);
    const env = {
      RUNSYNC_API_URL: sim.url,
      RUNSYNC_API_KEY: sim.key,
      RUNSYNC_WAREHOUSE_DIR: tmp.dir,
      RUNSYNC_START_DATE: formatTimestamp(spanStart(sim)),
      RUNSYNC_LOOKBACK: '4h',
      LOG_LEVEL: 'warn',
    };
    // Passes after the first are short; the kill times fall within a pass's span, and passes are
    // started (six at least, the clock moving after the third) until at least three were cut off,
    // so every seed gives the kills it is meant to.
    let killed = 0;
    for (let i = 0; i < 6 || (killed < 3 && i < 16); i++) {
      if (i === 3) sim.advance('20m');
      const child = spawnCli(['sync'], env);
      const done = collect(child, 120_000);
      const delay = 300 + random() * 2500;
      const timer = setTimeout(() => child.kill('SIGKILL'), delay);
      const r = await done;
      clearTimeout(timer);
      if (r.signal === 'SIGKILL') killed++;
      else expect(r.code, r.stderr).toBe(0);
    }
    expect(killed).toBeGreaterThan(2);
    sim.advance('20m');
    const last = await runCli(['sync'], env, { timeoutMs: 120_000 });
    expect(last.code, last.stderr).toBe(0);
    expect(await diffWithTruth(sim, tmp.dir, sim.clock.now())).toEqual([]);
    expect(await diffCatalog(sim, tmp.dir)).toEqual([]);
  });
});
