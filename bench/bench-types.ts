// Every benchmark is a file `bench/<name>.bench.ts` whose default export returns rows and whose
// `method` says, in a paragraph, what it measures and how; `npm run bench` runs them all (or those
// named: `npm run bench -- client`), prints one table and writes each bench's section of
// docs/performance.md.

export interface BenchRow {
  bench: string;
  metric: string;
  value: number | string;
  unit?: string;
  /** The target, as text (e.g. ">= 0.90"). */
  goal?: string;
  note?: string;
}

export interface BenchContext {
  /** Scale factor: 1 for the full run; smaller for a quick look (BENCH_SCALE). */
  scale: number;
  log(line: string): void;
}

export type Bench = (ctx: BenchContext) => Promise<BenchRow[]>;

/** What a bench file exports. */
export interface BenchModule {
  readonly default: Bench;
  /** One paragraph for docs/performance.md: what is measured, against what, and the knobs. */
  readonly method: string;
}
