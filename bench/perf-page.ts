// docs/performance.md, as the benches write it: a section per bench with the bench's own paragraph
// on its method and the table it printed the last time it ran, with when, on which commit and
// machine, and by which command. Running some benches replaces their results and keeps the
// others' as they were. Pure: the page is a function of its inputs.

export interface Machine {
  readonly cpu: string;
  readonly cores: number;
  readonly memoryGb: number;
  readonly node: string;
  readonly os: string;
  /** The one-minute load average when the bench started: a shared machine's other work. */
  readonly load: number;
}

export interface BenchRun {
  /** When it ended, ISO 8601. */
  readonly finishedAt: string;
  readonly seconds: number;
  /** `git rev-parse --short HEAD`. */
  readonly commit: string;
  /** Whether tracked files differed from that commit. */
  readonly dirty: boolean;
  readonly machine: Machine;
  /** The command that runs this bench alone, with the knobs it ran with. */
  readonly command: string;
  /** The table as the bench printed it. */
  readonly table: string;
}

export interface BenchInfo {
  readonly name: string;
  readonly method: string;
}

const open = (name: string) => `<!-- results:${name} -->`;
const close = (name: string) => `<!-- /results:${name} -->`;

/** The results block of one run. */
export function renderRun(name: string, run: BenchRun): string {
  const m = run.machine;
  const when = `${run.finishedAt.slice(0, 16).replace('T', ' ')} UTC`;
  return [
    open(name),
    `- Run: ${when}, ${Math.round(run.seconds)} s, commit \`${run.commit}\`${run.dirty ? ' with uncommitted changes' : ''}`,
    `- Machine: ${m.cpu}, ${m.cores} cores, ${m.memoryGb} GB, Node ${m.node}, ${m.os}; load ${m.load.toFixed(1)} at start`,
    `- Command: \`${run.command}\``,
    '',
    run.table,
    close(name),
  ].join('\n');
}

/** The results blocks of a page, by bench. */
export function resultsOf(page: string): Map<string, string> {
  const out = new Map<string, string>();
  const block = /<!-- results:([\w-]+) -->[\s\S]*?<!-- \/results:\1 -->/g;
  for (const m of page.matchAll(block)) out.set(m[1] as string, m[0]);
  return out;
}

const paragraph = (text: string) => text.trim().replace(/\s*\n\s*/g, ' ');

export interface PageInput {
  /** Every bench of bench/, in the order of the page. */
  readonly benches: readonly BenchInfo[];
  /** The page as it stands, if any: the results of benches not run now are kept from it. */
  readonly existing: string | null;
  /** Results of the benches run now, by name (renderRun). */
  readonly fresh: ReadonlyMap<string, string>;
  /** The commit the page is written at, for benches never run. */
  readonly commit: string;
}

export function renderPerformancePage(input: PageInput): string {
  const kept = resultsOf(input.existing ?? '');
  const sections = input.benches.map((b) => {
    const results = input.fresh.get(b.name) ?? kept.get(b.name) ?? `Not run yet on this commit (\`${input.commit}\`).`;
    return [`## ${b.name}`, paragraph(b.method), results].join('\n\n');
  });
  return `${[
    '# Performance',
    '<!-- Written by `npm run bench` (bench/run.ts) from the benches in bench/: do not edit by hand. -->',
    "Each section is one bench of `bench/`: what it measures (the bench's own description) and the table it printed the last time it ran, with when, on which commit and machine, and the command that runs it alone. `npm run bench` builds and runs every bench; `npx tsx bench/run.ts <name>` (after `npm run build`) runs one and replaces only its section. Figures from different machines or commits do not compare; ratios measured side by side in one run do.",
    input.benches.map((b) => `- [${b.name}](#${b.name})`).join('\n'),
    ...sections,
  ].join('\n\n')}\n`;
}
