import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { wellFormedJson } from '../src/api/well-formed.ts';
import { ArchiveWriter } from '../src/archive/writer.ts';
import { RUNS } from '../src/resources/registry.ts';
import {
  knownNode,
  mergeObserved,
  type Observed,
  observedToJson,
  observeUnknown,
} from '../src/resources/schema-observe.ts';
import { type Simulator, type SimulatorOptions, startSimulator } from '../src/simulator/index.ts';
import { type Micros, parseTimestamp } from '../src/util/timestamp.ts';
import { toJsonText } from '../src/warehouse/json-text.ts';
import { OBSERVED_NOTE } from '../src/warehouse/load-runs.ts';
import type { WorldSpec } from './world-warehouse.ts';

// What the scale bench shares: its worlds (the freshness bench's: seed 83, about 33,333 runs a
// day, dated 2026-03-01, so a world built for one bench serves the other), the raw archive of a
// world written straight from the generator, child processes timed with their peak RSS, and sizes
// on disk.

export const NOW = parseTimestamp('2026-03-01T00:00:00Z') as Micros;
const RUNS_PER_DAY = 33_333;

/** Where built worlds are kept between runs (BENCH_WORLDS_DIR; the system temp folder otherwise). */
export function worldsDir(): string {
  return process.env.BENCH_WORLDS_DIR ?? join(tmpdir(), 'runsync-bench-worlds');
}
/** Run details per archive file, as a load of that many would leave them. */
const FILE_RUNS = 1000;

export function scaleWorld(size: number): WorldSpec {
  return { seed: 83, size, days: size / RUNS_PER_DAY, now: NOW };
}

/**
 * A folder holding raw/runs for every run of the world, as loads would have archived them, written
 * straight from the generator (once; cached beside the worlds). A rebuild from it derives the
 * warehouse the world's loads made.
 */
export async function rawArchive(w: WorldSpec, log: (l: string) => void): Promise<string> {
  const dir = join(worldsDir(), `raw-noted-${w.seed}-${w.size}-${w.days}-${w.now}`);
  const done = join(dir, '.complete');
  if (existsSync(done)) return dir;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  log(`world ${w.size}: writing its raw archive in ${dir} (once)`);
  const sim = await startSimulator({ port: 0, seed: w.seed, size: w.size, days: w.days, now: w.now });
  let at = w.now - w.size * 10;
  let writer: ArchiveWriter | null = null;
  let observed: Observed | null = null;
  const known = knownNode(RUNS);
  // Each file notes what its payloads held beyond the schema, as a load's file does.
  const commit = async (w: ArchiveWriter) => {
    w.note(OBSERVED_NOTE, JSON.stringify(observed ? observedToJson(observed) : null));
    observed = null;
    await w.commit();
  };
  let n = 0;
  for (const generated of sim.world.truthRunDetails()) {
    // As the client mends an answer: the generator's text may hold lone surrogates.
    const d = wellFormedJson(generated, JSON.stringify(generated));
    writer ??= await ArchiveWriter.open(dir, 'runs', at);
    const seen = observeUnknown(d, known);
    if (seen) observed = observed ? mergeObserved(observed, seen) : seen;
    const detail = d as { id: string; updated_at: string };
    await writer.append({
      kind: 'payload',
      id: detail.id,
      updatedAt: detail.updated_at,
      fetchedAt: at,
      listedAt: null,
      payload: toJsonText(d),
    });
    at += 10;
    if (++n % FILE_RUNS === 0) {
      await commit(writer);
      writer = null;
      if (n % 100_000 === 0) log(`world ${w.size}: ${n} runs archived`);
    }
  }
  if (writer) await commit(writer);
  await sim.close();
  writeFileSync(done, '');
  return dir;
}

/**
 * The simulator of world `w` on a manual clock, `options` laid over (`start`: the startSimulator of
 * the checkout measured, this one's by default).
 */
export function worldSimulator(
  w: WorldSpec,
  options: SimulatorOptions = {},
  start: typeof startSimulator = startSimulator,
): Promise<Simulator> {
  return start({ port: 0, seed: w.seed, size: w.size, days: w.days, now: w.now, clock: 'manual', ...options });
}

/**
 * Asks the simulator's tool options once: it works them out of the whole world on the first
 * request (longer than the client waits at a million runs), where the API has them at hand.
 */
export async function warmToolOptions(sim: Simulator): Promise<void> {
  await fetch(`${sim.url}/api/v1/runs/tool-options`, { headers: { authorization: `Bearer ${sim.key}` } });
}

/** Bytes under `path` (a file, or a folder and everything in it). */
export function bytesUnder(path: string): number {
  if (!existsSync(path)) return 0;
  const st = statSync(path);
  if (!st.isDirectory()) return st.size;
  return readdirSync(path).reduce((n, f) => n + bytesUnder(join(path, f)), 0);
}

export interface Timed {
  wallMs: number;
  /** The peak RSS of the command's processes (the largest of them), in MB. */
  peakMb: number;
  stdout: string;
  code: number | null;
  /** Why the command failed (its message), or null. */
  failure: string | null;
}

/** Runs a command under GNU time: its wall time and its peak resident memory. */
export function timed(args: readonly string[], env: NodeJS.ProcessEnv): Promise<Timed> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const c = spawn('/usr/bin/time', ['-v', ...args], { env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    c.stdout.on('data', (d) => (stdout += d));
    c.stderr.on('data', (d) => (stderr += d));
    c.on('error', reject);
    c.on('close', (code) => {
      const wallMs = performance.now() - t0;
      const kb = /Maximum resident set size \(kbytes\): (\d+)/.exec(stderr);
      if (!kb) return reject(new Error(`no peak RSS for ${args.join(' ')}: ${stderr.slice(-500)}`));
      const failure = code === 0 ? null : (/runsync: (.*)/.exec(stderr)?.[1] ?? `exit ${code}`).slice(0, 120);
      resolve({ wallMs, peakMb: Number(kb[1]) / 1024, stdout, code, failure });
    });
  });
}
