import { setFlagsFromString } from 'node:v8';

// How far V8 lets its heap grow past what survived the last full collection. By default it grows
// the heap by up to 4x while the machine has memory to spare, and a load allocates quickly (every
// run detail is parsed, checked, serialized and archived) though little of it stays alive. The
// batches in flight are what stays alive, and every batch is promoted to the old generation, so
// the less room past them, the more full collections: too little costs CPU, V8's own growth costs
// memory the budget gives to DuckDB; half again is the balance between the two (the
// warehouse-load bench loads with it and with V8's own growth, docs/performance.md). V8 reads this
// factor at every collection, so setting it once the process runs takes effect; an operator's own
// flag (NODE_OPTIONS or the command line) is left as it is.

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
