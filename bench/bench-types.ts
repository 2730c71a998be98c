// Every benchmark is a file `bench/<name>.bench.ts` whose default export returns rows; `npm run
// bench` runs them all (or those named: `npm run bench -- client`) and prints one table.

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
