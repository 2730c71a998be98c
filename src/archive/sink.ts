import type { Micros } from '../util/timestamp.ts';
import type { ArchiveEndpoint } from './paths.ts';
import type { ArchiveRecord } from './writer.ts';

// Where loaders send what changed the warehouse: the raw archive's files, or nowhere when the
// archive itself is being replayed (rebuild), which must not archive its own input again.

export interface ArchiveSink {
  /** Writes the records as one archive file, visible once written; null when nothing was kept. */
  write(endpoint: ArchiveEndpoint, records: readonly ArchiveRecord[]): Promise<string | null>;
}

/**
 * The note of the personal-data policy a file's payloads were given (its fingerprint, or `off`):
 * rebuild applies the policy in force again to a file written under another.
 */
export const PII_NOTE = 'runsync.pii';

export function piiNote(policy: { readonly fingerprint: string } | null): string {
  return policy?.fingerprint ?? 'off';
}

/** `notes`: key-value metadata every file gets (the personal-data policy it was written under). */
export function fileArchive(
  warehouseDir: string,
  now: () => Micros,
  notes: Readonly<Record<string, string>> = {},
): ArchiveSink {
  return {
    async write(endpoint, records) {
      if (records.length === 0) return null;
      // Loaded on first use: the Parquet codec's modules are slow to load, and a warehouse opened
      // only to be read never archives.
      const { ArchiveWriter } = await import('./writer.ts');
      const archive = await ArchiveWriter.open(warehouseDir, endpoint, now());
      for (const [k, v] of Object.entries(notes)) archive.note(k, v);
      try {
        for (const r of records) await archive.append(r);
        return await archive.commit();
      } catch (e) {
        await archive.abort();
        throw e;
      }
    },
  };
}

export const NO_ARCHIVE: ArchiveSink = { write: async () => null };
