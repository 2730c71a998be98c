import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Micros, parseTimestamp } from '../../src/util/timestamp.ts';
import { loadRunDetails } from '../../src/warehouse/load-runs.ts';
import { openWarehouse } from '../../src/warehouse/open.ts';
import { rebuildInto } from '../../src/warehouse/rebuild.ts';
import type { Warehouse } from '../../src/warehouse/types.ts';
import { runDetail } from './run-fixture.ts';
import { count, simDetails, tempDir } from './wh-kit.ts';

// A stored run is found by where _sync_run_keys says it lies, not by reading every stored id: a
// run the merge fails to find would be stored twice. Each test loads a newer payload of runs
// already stored and checks that they were replaced, one row each, children not doubled.

let tmp: ReturnType<typeof tempDir>;
let clock = parseTimestamp('2026-03-01T00:00:00Z') as Micros;
const now = () => (clock += 1000);
beforeEach(() => {
  tmp = tempDir();
});
afterEach(() => tmp.cleanup());

type Detail = Record<string, unknown> & { id: string; updated_at: string };

/** The same runs, updated at `updatedAt`. */
function newer(details: readonly Detail[], updatedAt = '2027-01-01T00:00:00Z'): Detail[] {
  return details.map((d) => ({ ...d, updated_at: updatedAt }));
}

async function stored(wh: Warehouse): Promise<{ runs: number; ids: number; steps: number }> {
  return {
    runs: await count(wh, `SELECT count(*) FROM runs`),
    ids: await count(wh, `SELECT count(DISTINCT id) FROM runs`),
    steps: await count(wh, `SELECT count(*) FROM run_steps`),
  };
}

describe('finding stored runs', () => {
  it('finds a run wherever its created_at moved it, every time it moves', async () => {
    const wh = await openWarehouse(join(tmp.dir, 'w'), { now });
    const days = ['2026-02-10T10:00:00Z', '2026-02-14T10:00:00Z', '2026-02-14T23:00:00Z', '2026-02-10T11:00:00Z'];
    for (const [i, createdAt] of days.entries()) {
      const r = await loadRunDetails(wh, [runDetail({ created_at: createdAt, updated_at: `2026-02-2${i}T00:00:00Z` })]);
      expect(r, createdAt).toMatchObject(i === 0 ? { inserted: 1, updated: 0 } : { inserted: 0, updated: 1 });
      expect(await count(wh, `SELECT count(*) FROM runs`), createdAt).toBe(1);
    }
    expect(await wh.all(`SELECT CAST(created_date AS VARCHAR) AS d FROM runs`)).toEqual([{ d: '2026-02-10' }]);
    expect(await count(wh, `SELECT count(*) FROM run_steps WHERE created_date <> DATE '2026-02-10'`)).toBe(0);
    const steps = await count(wh, `SELECT count(*) FROM run_steps`);
    expect(steps).toBe((runDetail().steps as unknown[]).length);
    await wh.close();
  });

  it('finds the runs of a warehouse made before it kept where runs lie', async () => {
    const dir = join(tmp.dir, 'older');
    const details = simDetails(17, 40) as Detail[];
    const first = await openWarehouse(dir, { now });
    await loadRunDetails(first, details);
    const before = await stored(first);
    // As a warehouse of the schema before 0012 was: no table of keys, the migration not applied.
    await first.run(`DROP TABLE _sync_run_keys`);
    await first.run(`DELETE FROM _sync_migrations WHERE version = 12`);
    await first.close();

    const wh = await openWarehouse(dir, { now });
    const r = await loadRunDetails(wh, newer(details));
    expect(r).toMatchObject({ inserted: 0, updated: details.length });
    expect(await stored(wh)).toEqual(before);
    await wh.close();
  });

  it('finds the runs of a rebuilt warehouse', async () => {
    const details = simDetails(18, 40) as Detail[];
    const wh = await openWarehouse(join(tmp.dir, 'w'), { now });
    await loadRunDetails(wh, details);
    const before = await stored(wh);
    await wh.close();
    const target = join(tmp.dir, 'rebuilt');
    await rebuildInto(join(tmp.dir, 'w'), target);

    const rebuilt = await openWarehouse(target, { now });
    const r = await loadRunDetails(rebuilt, newer(details));
    expect(r).toMatchObject({ inserted: 0, updated: details.length });
    expect(await stored(rebuilt)).toEqual(before);
    await rebuilt.close();
  });
});
