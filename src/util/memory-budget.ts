import { availableParallelism } from 'node:os';

// One process's memory budget (RUNSYNC_MEMORY_LIMIT) shared out between the parts that hold
// memory: DuckDB's memory_limit (loads and look-ups, and a larger one for the export, during which
// JavaScript holds little), V8's old generation (run details in flight, pages, maps of the pass),
// DuckDB's threads (each holds working memory of its own) and the batch sizes. What is left over
// is what Node and DuckDB hold at start (code, the buffer pool's metadata, sockets). The shares
// keep loads within the default budget, which the warehouse-load and scale benches check
// (docs/performance.md); every part scales with the budget.

export const DEFAULT_MEMORY_LIMIT_SETTING = '400MB';

// As DuckDB reads sizes: MB and GB are powers of ten, MiB and GiB of two.
const MB = 1000 * 1000;
const UNITS: Record<string, number> = {
  b: 1,
  kb: 1000,
  kib: 1024,
  mb: MB,
  mib: 1024 * 1024,
  gb: 1000 * MB,
  gib: 1024 * 1024 * 1024,
};

/** The smallest budget runsync can work in: below it, loading's share is too little for DuckDB's merges. */
export const MIN_MEMORY_BYTES = 192 * MB;

export interface MemoryBudget {
  /** The whole budget, in bytes. */
  readonly bytes: number;
  /** DuckDB's memory_limit while loading, merging and looking up (DuckDB spills beyond it). */
  readonly duckdbMemoryLimit: string;
  /** DuckDB's memory_limit during an export, whose JavaScript side waits. */
  readonly exportMemoryLimit: string;
  /** DuckDB's threads while JavaScript works beside it (loads). */
  readonly threads: number;
  /** DuckDB's threads when JavaScript waits on reads (status, report). */
  readonly exportThreads: number;
  /**
   * DuckDB's threads for the export's Parquet files and the rebuild's staging: each thread holds
   * row groups or parsed payloads of its own beyond memory_limit, so a small budget works with one.
   */
  readonly bulkThreads: number;
  /**
   * Statements a rebuild or an export runs side by side, each on a connection and a core of its
   * own, each holding a row group in the making (a table's, or a Parquet file's).
   */
  readonly bulkLanes: number;
  /** V8's old generation ceiling, in MiB (--max-old-space-size). */
  readonly heapMb: number;
  /**
   * V8's young generation semi-space, in MiB (--max-semi-space-size). Node's default of 16 MiB
   * grows the young generation to three times that while pages and details stream through, all of
   * it resident beside the old generation.
   */
  readonly semiSpaceMb: number;
  /**
   * List pages a pass reads ahead of the commits. Their details sit in V8's heap while a batch's
   * unit checkpoints DuckDB's log, the two at their peaks together; two pages keep the API busy
   * through a batch's checkpoint at the rates an API key allows.
   */
  readonly bufferedPages: number;
  /**
   * DuckDB's allocator_flush_threshold: how much a DuckDB thread may keep of what it freed once a
   * task is done. DuckDB's default (128MB) would let a checkpoint's merges of one table after
   * another pile up freed memory beside the budget.
   */
  readonly allocatorFlushThreshold: string;
}

/** `400MB`, `1.5GB`, `512MiB` or a plain number of bytes; null when unreadable. */
export function parseMemorySize(raw: string): number | null {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(raw);
  if (!m) return null;
  const unit = (m[2] ?? '').toLowerCase();
  const factor = unit === '' ? 1 : UNITS[unit];
  if (factor === undefined) return null;
  const n = Number(m[1]) * factor;
  return Number.isFinite(n) && n > 0 ? Math.floor(n) : null;
}

/** Whether the size `more` is surely larger than `than` (unreadable sizes never are). */
export function isLargerMemorySize(more: string, than: string): boolean {
  return (parseMemorySize(more) ?? 0) > (parseMemorySize(than) ?? Infinity);
}

const mb = (bytes: number) => `${Math.max(16, Math.floor(bytes / MB))}MB`;
const clamp = (n: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, n));

// DuckDB keeps what a table was appended since its last checkpoint in blocks of its own, a block
// for each column and one for each column's validity (256 KiB each) however few the rows: a batch
// of run details appends to runs, runs_history, the child tables and the bookkeeping, some 140
// columns, about 70 MB. The loads' share holds them beside the batch's staging at the default
// budget; below it, every commit writes blocks out and reads them back.
export function memoryBudget(bytes: number, cores: number = availableParallelism()): MemoryBudget {
  const scale = bytes / (400 * MB);
  return {
    bytes,
    duckdbMemoryLimit: mb(bytes * 0.2),
    exportMemoryLimit: mb(bytes * 0.28),
    // A DuckDB thread holds working memory of its own, beyond memory_limit: threads come with budget.
    threads: clamp(Math.min(cores - 1, Math.floor(bytes / (200 * MB))), 1, 64),
    exportThreads: clamp(Math.min(cores, Math.floor(bytes / (96 * MB))), 1, 64),
    bulkThreads: clamp(Math.min(cores, Math.floor(bytes / (400 * MB))), 1, 64),
    bulkLanes: clamp(Math.min(cores, Math.floor(bytes / (200 * MB))), 1, 64),
    heapMb: Math.max(64, Math.floor((bytes * 0.45) / (1024 * 1024))),
    semiSpaceMb: clamp(Math.round(4 * scale), 1, 16),
    bufferedPages: clamp(Math.round(2 * scale), 2, 32),
    allocatorFlushThreshold: mb(bytes * 0.04),
  };
}

export function defaultMemoryBudget(): MemoryBudget {
  return memoryBudget(parseMemorySize(DEFAULT_MEMORY_LIMIT_SETTING) as number);
}

const gives = (given: readonly string[], flag: string) =>
  given.some((a) => a.includes(`--${flag}`) || a.includes(`--${flag.replaceAll('-', '_')}`));

/**
 * The V8 flags that size the heap, each unless the operator gave it (NODE_OPTIONS or the command
 * line); empty when both were given.
 */
export function heapFlags(budget: MemoryBudget, given: readonly string[]): string[] {
  const flags: string[] = [];
  if (!gives(given, 'max-old-space-size')) flags.push(`--max-old-space-size=${budget.heapMb}`);
  if (!gives(given, 'max-semi-space-size')) flags.push(`--max-semi-space-size=${budget.semiSpaceMb}`);
  return flags;
}

const ARENA_MAX = 'glibc.malloc.arena_max=2';

/**
 * The allocator settings a command is started again with. glibc's malloc gives threads that
 * allocate at once arenas of their own, up to eight per core, and each arena keeps what was freed
 * in it for reuse by its threads: DuckDB's, V8's and libuv's would each hold memory the others
 * could not use. Two arenas, unless the operator chose a number (GLIBC_TUNABLES or
 * MALLOC_ARENA_MAX). Other C libraries ignore the setting.
 */
export function allocatorEnv(env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const tunables = env.GLIBC_TUNABLES ?? '';
  if (env.MALLOC_ARENA_MAX !== undefined || tunables.includes('glibc.malloc.arena_max')) return {};
  return { GLIBC_TUNABLES: tunables ? `${tunables}:${ARENA_MAX}` : ARENA_MAX };
}

/** The heap flags for a process started with `env`: none when a setting the command will refuse. */
export function heapFlagsFromEnv(env: Readonly<Record<string, string | undefined>>, given: readonly string[]) {
  const bytes = parseMemorySize(env.RUNSYNC_MEMORY_LIMIT?.trim() || DEFAULT_MEMORY_LIMIT_SETTING);
  if (bytes === null || bytes < MIN_MEMORY_BYTES) return [];
  return heapFlags(memoryBudget(bytes), given);
}
