import { describe, expect, it } from 'vitest';
import { EXPORT_MEMORY_LIMIT, sizeBytes } from '../../src/export/parquet.ts';
import { limitHeapGrowth } from '../../src/util/heap-growth.ts';
import { DEFAULT_MEMORY_LIMIT } from '../../src/warehouse/open.ts';

describe('memory settings', () => {
  it('reads DuckDB sizes as it writes and takes them', () => {
    expect(sizeBytes('96MB')).toBe(96e6);
    expect(sizeBytes('91.5 MiB')).toBe(91.5 * 2 ** 20);
    expect(sizeBytes('2GB')).toBe(2e9);
    expect(sizeBytes('1.5 GiB')).toBe(1.5 * 2 ** 30);
    expect(sizeBytes('512 bytes')).toBe(512);
    // A form it does not know is never taken for less than the export needs.
    expect(sizeBytes('unlimited')).toBe(Number.POSITIVE_INFINITY);
    expect(sizeBytes(DEFAULT_MEMORY_LIMIT)).toBeLessThan(sizeBytes(EXPORT_MEMORY_LIMIT));
  });

  it("limits V8's heap growth unless the operator set it", () => {
    expect(limitHeapGrowth(25, ['--heap-growing-percent=60'])).toBe(false);
    expect(limitHeapGrowth(25, ['--max-old-space-size=512 --heap_growing_percent=60'])).toBe(false);
    expect(limitHeapGrowth(25, ['--max-old-space-size=512', ''])).toBe(true);
  });
});
