import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SimClock } from '../src/simulator/clock.ts';
import { SimWorld } from '../src/simulator/world.ts';
import { type Micros, parseTimestamp } from '../src/util/timestamp.ts';
import { toJsonText } from '../src/warehouse/json-text.ts';
import { DEFAULT_MEMORY_LIMIT } from '../src/warehouse/open.ts';
import type { Bench, BenchRow } from './bench-types.ts';

/** What the bench measures and how, for docs/performance.md (`npm run bench` writes it). */
export const method = `Loading N run details from the simulator's generator (N = 20,000, about a million child rows;
\`BENCH_SCALE\` scales it) with checking, raw archive, staging, merge and checkpoint, in batches of
400 with two in flight (the loader checks and archives the next batch while DuckDB merges the
previous one), compared with DuckDB's own \`read_json\` + \`unnest\` of the same file, the ceiling.
Every measurement runs in a fresh process of the compiled code, so its peak memory is its own; the
ceiling runs before and after the loads and the faster is taken, as for the load at N, so a noisy
neighbour weighs on both alike. CPU time of all threads is shown beside the wall time. Also: one
page (100 runs) per commit, the load as the sync engine commits it (a warehouse unit per batch),
peak RSS at N and 4N with the CLI's heap growth and with V8's own, and the full Parquet export.`;

// The child runs compiled (dist/, as `npx runsync` runs), so its memory is what users see; the
// TypeScript loader alone would add about 20 MB. `npm run bench` builds first.
const CHILD = fileURLToPath(new URL('../dist/bench/warehouse-load-child.js', import.meta.url));
const BATCH = 400;
const PAGE = 100;
// The CLI limits how far V8 grows its heap past what is alive (src/util/heap-growth.ts), and the
// child does the same; side by side, the child also runs with V8's own growth.
const V8_DEFAULT_HEAP = { RUNSYNC_BENCH_V8_DEFAULT_HEAP: '1' };

async function writeDetails(seed: number, count: number, files: { path: string; lines: number }[]): Promise<number> {
  const now = parseTimestamp('2026-03-01T00:00:00Z') as Micros;
  const world = new SimWorld({ seed, size: count, days: 30, initialNow: now }, new SimClock(now));
  const outs = files.map((f) => ({ ...f, stream: createWriteStream(f.path) }));
  let n = 0;
  for (const d of world.truthRunDetails()) {
    const line = `${toJsonText(d)}\n`;
    for (const o of outs) {
      if (n < o.lines && !o.stream.write(line)) await once(o.stream, 'drain');
    }
    n++;
  }
  for (const o of outs) {
    o.stream.end();
    await once(o.stream, 'finish');
  }
  return n;
}

function child(args: string[], env: Record<string, string> = {}): Promise<Record<string, number>> {
  if (!existsSync(CHILD)) throw new Error(`${CHILD} is missing: run \`npm run build\` first (\`npm run bench\` does)`);
  return new Promise((resolve, reject) => {
    const c = spawn(process.execPath, [CHILD, ...args], {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, ...env },
    });
    let out = '';
    c.stdout.setEncoding('utf8').on('data', (s: string) => (out += s));
    c.on('exit', (code) => {
      const last = out.trim().split('\n').pop() ?? '';
      if (code !== 0 || !last.startsWith('{')) reject(new Error(`bench child ${args[0]} exited with ${code}`));
      else resolve(JSON.parse(last) as Record<string, number>);
    });
  });
}

const bench: Bench = async (ctx) => {
  const n = Math.max(500, Math.round(20_000 * ctx.scale));
  const dir = mkdtempSync(join(tmpdir(), 'runsync-bench-'));
  try {
    const fileN = join(dir, 'details-n.ndjson');
    const file4N = join(dir, 'details-4n.ndjson');
    ctx.log(`generating ${4 * n} run details`);
    const made = await writeDetails(7, 4 * n, [
      { path: fileN, lines: n },
      { path: file4N, lines: 4 * n },
    ]);
    const bigN = Math.min(made, 4 * n);

    ctx.log('ceiling: DuckDB read_json + unnest');
    const ceilingBefore = await child(['ceiling', fileN, join(dir, 'c1')]);
    ctx.log(`loading ${n}`);
    const load = await child(['load', fileN, String(n), join(dir, 'w1'), String(BATCH)]);
    ctx.log(`loading ${bigN}`);
    const load4 = await child(['load', file4N, String(bigN), join(dir, 'w4'), String(BATCH)]);
    ctx.log(`loading ${n} and ${bigN} with V8's own heap growth`);
    const v8Default = await child(
      ['load', fileN, String(n), join(dir, 'h1'), String(BATCH), 'no-export'],
      V8_DEFAULT_HEAP,
    );
    const v8Default4 = await child(
      ['load', file4N, String(bigN), join(dir, 'h4'), String(BATCH), 'no-export'],
      V8_DEFAULT_HEAP,
    );
    ctx.log(`DuckDB's part of the load at N alone`);
    const replayed = await child(['replay', join(dir, 'w1'), join(dir, 'rp')]);
    ctx.log('ceiling again');
    const ceilingAfter = await child(['ceiling', fileN, join(dir, 'c2')]);
    ctx.log(`loading ${n} again`);
    const loadAgain = await child(['load', fileN, String(n), join(dir, 'w2'), String(BATCH), 'no-export']);
    ctx.log(`loading ${n} as the sync engine commits`);
    const unitLoad = await child(['units', fileN, String(n), join(dir, 'wu'), String(BATCH)]);
    const pageRuns = Math.min(n, 5000);
    ctx.log(`loading ${pageRuns} one page per commit`);
    const paged = await child(['load', fileN, String(pageRuns), join(dir, 'wp'), String(PAGE)]);
    const stagingRuns = Math.min(n, 5000);
    ctx.log(`staging methods on ${stagingRuns}`);
    const staging = await child(['staging', fileN, String(stagingRuns), join(dir, 'st'), String(BATCH)]);

    const perS = (count: number, ms: number) => count / (ms / 1000);
    /** Runs a second of what a child timed (by default its load); a child prints numbers only. */
    const runsPerS = (r: Record<string, number>, ms = 'loadMs') => perS(r.runs as number, r[ms] as number);
    const ceiling = runsPerS(ceilingBefore, 'ms') >= runsPerS(ceilingAfter, 'ms') ? ceilingBefore : ceilingAfter;
    // The load is taken as the ceiling is: the faster of two runs, one early and one late.
    const fast = runsPerS(load) >= runsPerS(loadAgain) ? load : loadAgain;
    const loadRuns = runsPerS(fast);
    const loadChild = perS(fast.childRows as number, fast.loadMs as number);
    const ceilRuns = runsPerS(ceiling, 'ms');
    const ceilChild = perS(ceiling.childRows as number, ceiling.ms as number);
    /** Microseconds of CPU per run, from milliseconds in all. */
    const cpuPerRun = (cpuMs: number, runs: number) => (cpuMs / runs) * 1000;
    const replayRuns = runsPerS(replayed, 'ms');
    const archiveRate = perS(stagingRuns, staging.archiveMs as number);
    const appenderRate = perS(stagingRuns, staging.appenderMs as number);
    const b = 'warehouse-load';
    const ceilingNote =
      "DuckDB alone, same NDJSON, typed columns, into a file, with checkpoint, DuckDB's default memory limit and" +
      ` threads (peak RSS ${Math.round(ceiling.peakRssMb as number)} MB); before/after the loads` +
      ` ${Math.round(runsPerS(ceilingBefore, 'ms'))}/${Math.round(runsPerS(ceilingAfter, 'ms'))}` +
      ' runs/s, the faster taken';
    const rows: BenchRow[] = [
      {
        bench: b,
        metric: `load ${load.runs} runs: runs/s`,
        value: loadRuns,
        unit: 'runs/s',
        goal: `>= ${Math.round(ceilRuns / 2)}`,
        note:
          `batches of ${BATCH}, 2 in flight; check + raw archive + stage + merge + checkpoint;` +
          ` two loads ${Math.round(runsPerS(load))}/${Math.round(runsPerS(loadAgain))} runs/s, the faster taken`,
      },
      {
        bench: b,
        metric: `load ${load.runs} runs: child rows/s`,
        value: loadChild,
        unit: 'rows/s',
        goal: `>= ${Math.round(ceilChild / 2)}`,
        note: `${fast.childRows} child rows`,
      },
      { bench: b, metric: 'ceiling: read_json + unnest runs/s', value: ceilRuns, unit: 'runs/s', note: ceilingNote },
      { bench: b, metric: 'ceiling: child rows/s', value: ceilChild, unit: 'rows/s' },
      { bench: b, metric: 'load / ceiling', value: loadRuns / ceilRuns, goal: '>= 0.50' },
      {
        bench: b,
        metric: `DuckDB's part alone / ceiling`,
        value: replayRuns / ceilRuns,
        note:
          `the ${replayed.files} archive files of the load at N merged again, one transaction each, with no` +
          ` JavaScript work beside: ${Math.round(replayRuns)} runs/s,` +
          ` CPU ${Math.round(cpuPerRun(replayed.cpuMs as number, replayed.runs as number))} µs per run,` +
          ` peak RSS ${Math.round(replayed.peakRssMb as number)} MB; the bound on load / ceiling at this memory limit`,
      },
      {
        bench: b,
        metric: 'CPU per run: load / ceiling',
        value:
          `${Math.round(cpuPerRun(fast.loadCpuMs as number, fast.runs as number))}` +
          ` / ${Math.round(cpuPerRun(ceiling.cpuMs as number, ceiling.runs as number))}`,
        unit: 'µs',
        note: 'all threads; the load excludes parsing the input',
      },
      {
        bench: b,
        metric: `load ${unitLoad.runs} runs as the sync engine commits`,
        value: runsPerS(unitLoad),
        unit: 'runs/s',
        note:
          `one warehouse unit per batch of ${BATCH} (open, load, checkpoint, close), so readers get in between;` +
          ` peak RSS ${Math.round(unitLoad.loadPeakRssMb as number)} MB`,
      },
      {
        bench: b,
        metric: `load ${paged.runs} runs, one page (${PAGE}) per commit`,
        value: runsPerS(paged),
        unit: 'runs/s',
        note: '2 in flight',
      },
      {
        bench: b,
        metric: 'end to end incl. parsing: runs/s',
        value: runsPerS(load, 'wallMs'),
        unit: 'runs/s',
        note: `JSON.parse of the input alone: ${Math.round(load.parseMs as number)} ms`,
      },
      {
        bench: b,
        metric: `staging+merge, DuckDB reads raw archive (${stagingRuns})`,
        value: archiveRate,
        unit: 'runs/s',
        note: 'kept',
      },
      {
        bench: b,
        metric: `staging+merge, TS flatten + Appender (${stagingRuns})`,
        value: appenderRate,
        unit: 'runs/s',
        note: `archive-read is ${(archiveRate / appenderRate).toFixed(2)}x`,
      },
      {
        bench: b,
        metric: `peak RSS at N = ${load.runs}`,
        value: Math.max(load.loadPeakRssMb as number, loadAgain.loadPeakRssMb as number),
        unit: 'MB',
        goal: '< 400, flat',
        note:
          `fresh process, plain node with the CLI's heap growth, DuckDB memory_limit ${DEFAULT_MEMORY_LIMIT};` +
          ` ${Math.round(load.startRssMb as number)} MB at the process's start`,
      },
      {
        bench: b,
        metric: `peak RSS at 4N = ${load4.runs}`,
        value: load4.loadPeakRssMb as number,
        unit: 'MB',
        goal: '< 400, flat',
        note: `4N load ${Math.round(runsPerS(load4))} runs/s`,
      },
      {
        bench: b,
        metric: `peak RSS at N, V8's own heap growth`,
        value: v8Default.loadPeakRssMb as number,
        unit: 'MB',
        note: `load ${Math.round(runsPerS(v8Default))} runs/s`,
      },
      {
        bench: b,
        metric: `peak RSS at 4N, V8's own heap growth`,
        value: v8Default4.loadPeakRssMb as number,
        unit: 'MB',
        note: `load ${Math.round(runsPerS(v8Default4))} runs/s`,
      },
      {
        bench: b,
        metric: `export (full) of N`,
        value: (load.exportMs as number) / 1000,
        unit: 's',
        note: `${load.exportFiles} files, ZSTD; peak RSS with export ${Math.round(load.peakRssMb as number)} MB`,
      },
      {
        bench: b,
        metric: `export (full) of 4N`,
        value: (load4.exportMs as number) / 1000,
        unit: 's',
        note: `peak RSS with export ${Math.round(load4.peakRssMb as number)} MB`,
      },
    ];
    return rows;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
};

export default bench;
