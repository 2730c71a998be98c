import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../src/config/index.ts';
import { applyPolicy, defaultPolicyFile, parsePolicy } from '../src/pii/index.ts';
import { parseContract, refusedChanges } from '../src/resources/contract.ts';
import { RESOURCES, RUNS } from '../src/resources/registry.ts';
import { applyChanges, planChanges } from '../src/resources/schema-evolve.ts';
import { knownNode, observeAll } from '../src/resources/schema-observe.ts';
import type { ResourceSpec } from '../src/resources/types.ts';
import { startSimulator } from '../src/simulator/index.ts';
import { createEngine, runPass } from '../src/sync/index.ts';
import { silentLogger } from '../src/util/logger.ts';
import { formatTimestamp, MICROS_PER_DAY, type Micros, parseTimestamp } from '../src/util/timestamp.ts';
import type { Bench, BenchRow } from './bench-types.ts';

/** What the bench measures and how, for docs/performance.md (`npm run bench` writes it). */
export const method = `What the personal-data policy and a frozen schema contract cost a first
sync. The same first full sync of 2,000 simulator runs (\`BENCH_SCALE\` scales it), with no rate
limit so that the time is runsync's own work (fetching from a simulator in a process of its own,
checking, archiving, loading DuckDB, exporting Parquet), runs into a fresh warehouse with the
policy off, with \`RUNSYNC_PII_POLICY=default\` and with \`RUNSYNC_SCHEMA_CONTRACT=freeze\`, turn
about, five times each (\`BENCH_REPEAT\`), each round in another order; the medians of runsync's
CPU time are compared (wall time is given too; both move with the machine's other work). Apart,
the default policy is applied to every run detail of the simulator in a loop: its cost per run, and
that cost as a share of the CPU time the policy-off first sync spent per run, a figure the
machine's other work sways less; and a frozen contract judges the same runs grown new members
against tables that hold them already, what it costs each payload once columns evolved (a first
sync has none to judge).`;

const NOW = '2026-03-01T00:00:00Z';
const DAYS = 30;
const KEY = 'a bench key, long enough for the policy';

type Variant = 'off' | 'policy' | 'freeze';
const ENV: Record<Variant, Record<string, string>> = {
  off: {},
  policy: { RUNSYNC_PII_POLICY: 'default', RUNSYNC_PII_KEY: KEY },
  freeze: { RUNSYNC_SCHEMA_CONTRACT: 'freeze' },
};

interface Took {
  /** Wall time. */
  ms: number;
  /** CPU time of this process, all its threads: the engine's and DuckDB's. */
  cpuMs: number;
}

interface SimProcess {
  url: string;
  key: string;
  stop(): void;
}

/** The simulator in a process of its own, so that this process's CPU time is runsync's alone. */
async function simProcess(size: number): Promise<SimProcess> {
  const key = `svc_live_${randomBytes(12).toString('hex')}`;
  const main = fileURLToPath(new URL('../src/cli/main.ts', import.meta.url));
  const args = ['--import', 'tsx', main, 'simulate', '--port', '0', '--seed', '61', '--size', String(size)];
  args.push('--days', String(DAYS), '--now', NOW, '--clock', 'manual', '--key', key, '--rate-limit', '0');
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'ignore'] });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve(m[1] as string);
    });
    child.once('exit', (code) => reject(new Error(`the simulator ended (${code}) before listening: ${out}`)));
  });
  return { url, key, stop: () => child.kill('SIGTERM') };
}

async function firstSync(sim: SimProcess, variant: Variant): Promise<Took> {
  const dir = mkdtempSync(join(tmpdir(), 'runsync-bench-pii-'));
  const start = (parseTimestamp(NOW) as Micros) - DAYS * MICROS_PER_DAY;
  const config = loadConfig({
    RUNSYNC_API_URL: sim.url,
    RUNSYNC_API_KEY: sim.key,
    RUNSYNC_WAREHOUSE_DIR: dir,
    RUNSYNC_START_DATE: formatTimestamp(start),
    ...ENV[variant],
  });
  const engine = createEngine(config, { logger: silentLogger(), signal: new AbortController().signal });
  try {
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    const r = await runPass(engine.deps);
    if (r.status !== 'ok') throw new Error(`the ${variant} first sync ended ${r.status}: ${r.errors.join('; ')}`);
    const c = process.cpuUsage(c0);
    return { ms: performance.now() - t0, cpuMs: (c.user + c.system) / 1000 };
  } finally {
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const median = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

const bench: Bench = async ({ scale, log }) => {
  const size = Math.max(200, Math.round(2000 * scale));
  const repeat = Number(process.env.BENCH_REPEAT ?? '5');
  const sim = await simProcess(size);
  const times: Record<Variant, Took[]> = { off: [], policy: [], freeze: [] };
  try {
    // A first round warms up what the others would otherwise pay for first (modules, the JIT).
    await firstSync(sim, 'off');
    const variants = ['off', 'policy', 'freeze'] as const;
    for (let i = 0; i < repeat; i++) {
      // Each round in another order: whatever the first of a round pays is not one variant's.
      for (const v of [...variants.slice(i % 3), ...variants.slice(0, i % 3)]) {
        const took = await firstSync(sim, v);
        times[v].push(took);
        log(`${v}: ${(took.ms / 1000).toFixed(2)} s, ${(took.cpuMs / 1000).toFixed(2)} s of CPU`);
      }
    }
    const policy = parsePolicy(readFileSync(defaultPolicyFile(), 'utf8'), { key: Buffer.from(KEY), source: 'default' });
    const world = await startSimulator({ port: 0, seed: 61, size, days: DAYS, now: NOW });
    const details = [...world.world.truthRunDetails()];
    // The same runs once the API grew members, judged by a frozen contract against tables that
    // hold them already: what freeze costs each payload of a warehouse whose columns evolved.
    world.world.runs.grownSince = 0;
    const grown = [...world.world.truthRunDetails()];
    await world.close();
    const evolved = applyChanges(RESOURCES, planChanges(RUNS, observeAll(RUNS, grown))).find(
      (r) => r.table === 'runs',
    ) as ResourceSpec;
    const known = knownNode(evolved);
    const freeze = parseContract('freeze');
    const f0 = performance.now();
    for (const d of grown) if (refusedChanges(freeze, evolved, known, d).length) throw new Error('refused');
    const judgeUs = ((performance.now() - f0) * 1000) / grown.length;
    const rounds = 3;
    const t0 = performance.now();
    for (let k = 0; k < rounds; k++) for (const d of details) applyPolicy(policy, 'runs', d);
    const perRunUs = ((performance.now() - t0) * 1000) / (rounds * details.length);
    const wall = (v: Variant) => median(times[v].map((t) => t.ms));
    const cpu = (v: Variant) => median(times[v].map((t) => t.cpuMs));
    const added = (of: (v: Variant) => number, v: Variant) => Math.round(((of(v) - of('off')) / of('off')) * 1000) / 10;
    const s = (ms: number) => +(ms / 1000).toFixed(2);
    const share = (us: number) => Math.round((us / ((cpu('off') * 1000) / size)) * 1000) / 10;
    const row = (metric: string, value: number, unit: string, extra: Partial<BenchRow> = {}): BenchRow => ({
      bench: 'pii-policy',
      metric,
      value,
      unit,
      ...extra,
    });
    const rows: BenchRow[] = [
      row(`first sync of ${size} runs, policy off`, s(wall('off')), 's', { note: `${s(cpu('off'))} s of CPU` }),
      row('first sync, default policy', s(wall('policy')), 's', { note: `${s(cpu('policy'))} s of CPU` }),
      row('default policy, added CPU time', added(cpu, 'policy'), '%', {
        goal: '<= 10',
        note: `wall time ${added(wall, 'policy')}%`,
      }),
      row('first sync, contract freeze', s(wall('freeze')), 's', { note: `${s(cpu('freeze'))} s of CPU` }),
      row('contract freeze, added CPU time', added(cpu, 'freeze'), '%', {
        goal: '<= 10',
        note: `wall time ${added(wall, 'freeze')}%`,
      }),
      row('default policy applied, per run detail', Math.round(perRunUs), 'µs', {
        note: `${details.length} details, ${rounds} rounds`,
      }),
      row('that, of the CPU time a first sync spends per run', share(perRunUs), '%', { goal: '<= 10' }),
      row('contract freeze judging, per run detail with evolved columns', Math.round(judgeUs), 'µs', {
        note: `${share(judgeUs)}% of a first sync's CPU time per run`,
      }),
    ];
    return rows;
  } finally {
    sim.stop();
  }
};

export default bench;
