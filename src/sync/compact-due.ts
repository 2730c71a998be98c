import { COMPACT_WHEN, type CompactWhen, compactionDue, compactWarehouse } from '../warehouse/compact.ts';
import type { SyncDeps } from './types.ts';

// After a pass or a backfill, the warehouse is compacted when the blocks its checkpoints freed
// have become a large share of the file (warehouse/compact.ts). A compaction that fails leaves the
// file as it was, and the operation's work stands.

export async function compactWhenDue(
  deps: Pick<SyncDeps, 'gate' | 'logger'>,
  when: CompactWhen = COMPACT_WHEN,
): Promise<boolean> {
  try {
    if (!(await deps.gate.use((wh) => compactionDue(wh, when)))) return false;
    const r = await deps.gate.alone((options) => compactWarehouse(deps.gate.dir, options));
    return r.swapped;
  } catch (e) {
    deps.logger.warn({ err: e }, 'could not compact the warehouse; it is left as it was');
    return false;
  }
}
