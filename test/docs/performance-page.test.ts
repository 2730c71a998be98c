import { readdir, readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import type { BenchModule } from '../../bench/bench-types.ts';
import { type BenchRun, renderPerformancePage, renderRun, resultsOf } from '../../bench/perf-page.ts';
import { formatTable } from '../../bench/table.ts';

// docs/performance.md is written by the benches: running one bench replaces its section's results
// and keeps every other bench's, and each section's method is the bench's own text.

const BENCH_DIR = new URL('../../bench/', import.meta.url);

const run = (commit: string, value: number): BenchRun => ({
  finishedAt: '2026-03-01T10:20:30.000Z',
  seconds: 42,
  commit,
  dirty: false,
  machine: { cpu: 'Test CPU', cores: 2, memoryGb: 8, node: 'v20.18.0', os: 'Linux 6.1', load: 0.5 },
  command: `BENCH_SCALE=0.25 npx tsx bench/run.ts alpha`,
  table: formatTable([{ bench: 'alpha', metric: 'rate / R', value, goal: '>= 0.90' }]),
});

const benches = [
  { name: 'alpha', method: 'Alpha measures\n  one thing.' },
  { name: 'beta', method: 'Beta measures another.' },
];

describe('the performance page', () => {
  it('keeps the results of benches not run, replaces those run, and says which never ran', () => {
    const first = renderPerformancePage({
      benches,
      existing: null,
      fresh: new Map([['alpha', renderRun('alpha', run('aaaaaaa', 0.91))]]),
      commit: 'aaaaaaa',
    });
    expect(first).toContain('## alpha\n\nAlpha measures one thing.\n\n<!-- results:alpha -->');
    expect(first).toContain('- Run: 2026-03-01 10:20 UTC, 42 s, commit `aaaaaaa`');
    expect(first).toContain('- Machine: Test CPU, 2 cores, 8 GB, Node v20.18.0, Linux 6.1; load 0.5 at start');
    expect(first).toContain('| alpha | rate / R |  0.91 |');
    expect(first).toContain('## beta\n\nBeta measures another.\n\nNot run yet on this commit (`aaaaaaa`).');

    const second = renderPerformancePage({
      benches: [{ name: 'alpha', method: 'Alpha, reworded.' }, benches[1] as (typeof benches)[number]],
      existing: first,
      fresh: new Map([['beta', renderRun('beta', { ...run('bbbbbbb', 0.5), command: 'npx tsx bench/run.ts beta' })]]),
      commit: 'bbbbbbb',
    });
    expect(resultsOf(second).get('alpha')).toBe(resultsOf(first).get('alpha'));
    expect(second).toContain('## alpha\n\nAlpha, reworded.');
    expect(resultsOf(second).get('beta')).toContain('commit `bbbbbbb`');
    expect(second).not.toContain('Not run yet');
  });

  it('gives every bench of bench/ a paragraph on its method', async () => {
    const files = (await readdir(BENCH_DIR)).filter((f) => f.endsWith('.bench.ts'));
    expect(files.length).toBeGreaterThan(5);
    for (const f of files) {
      const mod = (await import(new URL(f, BENCH_DIR).href)) as BenchModule;
      expect(typeof mod.default, `${f} exports no bench`).toBe('function');
      expect(mod.method?.length ?? 0, `${f} exports no method paragraph`).toBeGreaterThan(100);
    }
    const page = await readFile(new URL('../../docs/performance.md', import.meta.url), 'utf8');
    for (const f of files)
      expect(page, `docs/performance.md lacks ${f}`).toContain(`## ${f.replace('.bench.ts', '')}\n`);
  });
});
