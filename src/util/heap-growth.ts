import { setFlagsFromString } from 'node:v8';

// How far V8 lets its heap grow past what survived the last full collection. By default it grows
// the heap by up to 4x while the machine has memory to spare, and a load allocates quickly (every
// run detail is parsed, checked, serialized and archived) though little of it stays alive: the
// heap reached 230 MB with 50-60 MB alive. The batches in flight are what stays alive, and every
// batch is promoted to the old generation, so the less room past them, the more full collections:
// at 25% a load of 20,000 run details ran about 110 of them, and with V8's own growth the same
// load took a quarter less CPU (18.4 s against 24.4 s) but peaked 110 MB higher. At 50%, with
// DuckDB's memory limit lowered to leave the peak where it was, the load took a fifth less time
// (warehouse/open.ts has the figures). V8 reads this factor at every collection, so setting it
// once the process runs takes effect; an operator's own flag (NODE_OPTIONS or the command line)
// is left as it is.

export const HEAP_GROWING_PERCENT = 50;

const FLAG = '--heap-growing-percent';

export function limitHeapGrowth(
  percent = HEAP_GROWING_PERCENT,
  given: readonly string[] = [...process.execArgv, process.env.NODE_OPTIONS ?? ''],
): boolean {
  if (given.some((a) => a.includes(FLAG) || a.includes('--heap_growing_percent'))) return false;
  setFlagsFromString(`${FLAG}=${percent}`);
  return true;
}
