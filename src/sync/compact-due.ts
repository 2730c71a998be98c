import { statSync } from 'node:fs';
import { statfs } from 'node:fs/promises';
import { join } from 'node:path';
import { compactWarehouse } from '../warehouse/compact.ts';
import { DB_FILE } from '../warehouse/types.ts';
import type { SyncDeps } from './types.ts';

// After a pass or a backfill, the warehouse is compacted when the blocks its checkpoints freed
// have become a large share of the file (compactionDue, warehouse/compact.ts). A compaction that
// fails leaves the file as it was, and the operation's work stands.

/** Compacts the warehouse through the gate; true when the compacted file took the old one's place. */
export async function compactNow(deps: Pick<SyncDeps, 'gate' | 'logger'>): Promise<boolean> {
  try {
    // The copy needs room for the whole file beside it; without it, a copy would fail at the end,
    // pass after pass. Said once a pass, and left to `runsync compact` once there is room.
    const { bavail, bsize } = await statfs(deps.gate.dir);
    const size = statSync(join(deps.gate.dir, DB_FILE)).size;
    if (bavail * bsize < size * 1.1) {
      deps.logger.warn({ size, free: bavail * bsize }, 'no room on the disk to compact the warehouse beside itself');
      return false;
    }
    const r = await deps.gate.alone((options) => compactWarehouse(deps.gate.dir, options));
    return r.swapped;
  } catch (e) {
    deps.logger.warn({ err: e }, 'could not compact the warehouse; it is left as it was');
    return false;
  }
}
