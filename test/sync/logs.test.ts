import { describe, expect, it } from 'vitest';
import { runPass } from '../../src/sync/index.ts';
import { createLogger } from '../../src/util/logger.ts';
import { engineFor, perTest } from './kit.ts';

// Logs as operators read them: JSON lines, and every line a pass writes (the engine's, the API
// client's, the budget's, the warehouse's) carries the pass's id.

describe('pass logs', () => {
  const each = perTest();

  it('every line of a pass carries its pass id', async () => {
    const sim = await each.sim({
      seed: 95,
      size: 150,
      days: 3,
      faults: { serverErrorRate: 0.05, seed: 3 },
      rateLimit: { perKey: { limit: 200, windowSeconds: 1 } },
    });
    const dir = each.dir();
    const lines: string[] = [];
    const logger = createLogger({ level: 'debug', destination: { write: (l: string) => lines.push(l) } });
    const engine = engineFor({ sim, dir: dir, logger });
    try {
      const r = await runPass(engine.deps);
      const parsed = lines.map((l) => JSON.parse(l) as { passId?: string; msg: string });
      expect(parsed.length).toBeGreaterThan(20);
      // Lines from the client (retries), the budget and the warehouse, not only the engine's own.
      const kinds = new Set(parsed.map((p) => p.msg));
      expect([...kinds].some((m) => /retry|retrying/i.test(m))).toBe(true);
      expect(kinds.has('warehouse unit')).toBe(true);
      expect(parsed.filter((p) => p.passId !== r.id).map((p) => p.msg)).toEqual([]);
    } finally {
      await engine.close();
    }
  });
});
