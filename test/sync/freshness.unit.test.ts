import { describe, expect, it } from 'vitest';
import { combineLags, FreshnessSample } from '../../src/sync/freshness.ts';
import { MICROS_PER_SECOND, type Micros } from '../../src/util/timestamp.ts';

const s = (n: number) => (n * MICROS_PER_SECOND) as Micros;

describe('freshness of a pass', () => {
  it('gives the lag of each change to the commit and to the export, in seconds', () => {
    const f = new FreshnessSample();
    // Changes 1..100 s before a commit at 1,000 s; the export ends 30 s later.
    f.record(
      Array.from({ length: 100 }, (_, i) => s(1000 - (i + 1))),
      s(1000),
    );
    expect(f.summary().parquet).toBeNull();
    f.exported(s(1030));
    const { warehouse, parquet } = f.summary();
    expect(warehouse).toEqual({ count: 100, p50: 51, p95: 96, max: 100 });
    expect(parquet).toEqual({ count: 100, p50: 81, p95: 126, max: 130 });
  });

  it('keeps memory flat over millions of runs, the largest lag exact', () => {
    const f = new FreshnessSample();
    for (let batch = 0; batch < 300; batch++) {
      const changes = Array.from({ length: 10_000 }, (_, i) => s(5_000_000 - ((batch * 10_000 + i) % 600)));
      f.record(changes, s(5_000_000));
    }
    f.record([s(1_000)], s(5_000_000));
    const w = f.summary().warehouse;
    expect(w?.count).toBe(3_000_001);
    expect(w?.max).toBe(4_999_000);
    expect(w?.p50).toBeGreaterThan(270);
    expect(w?.p50).toBeLessThan(330);
    // The sample itself stays bounded.
    expect((f as unknown as { changed: number[] }).changed.length).toBeLessThanOrEqual(8_192);
  });

  it('has nothing to say of a pass that loaded nothing', () => {
    expect(new FreshnessSample().summary()).toEqual({ warehouse: null, parquet: null });
  });

  it('combines passes: the median weighted by runs, the largest p95 and max', () => {
    expect(
      combineLags([
        { count: 10, p50: 5, p95: 20, max: 30 },
        { count: 100, p50: 40, p95: 50, max: 55 },
        { count: 0, p50: 0, p95: 0, max: 0 },
      ]),
    ).toEqual({ count: 110, p50: 40, p95: 50, max: 55 });
    expect(combineLags([])).toBeNull();
  });
});
