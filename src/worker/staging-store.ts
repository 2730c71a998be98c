import { gunzipSync, gzipSync } from 'node:zlib';
import type { ObjectStore } from '../storage/types.ts';

// Fetchers hand run details to the writer through staged files, never through Redis: a staged
// file is written whole (a folder's files aside and renamed into place, an object store's by one
// PUT) so the writer never reads half of one, read by the writer, and removed only once its rows
// are committed. Across machines the store is a shared volume or a bucket (RUNSYNC_STAGING_URL).

export interface StagedBatch {
  /** Each detail under the id it was asked for. */
  details: { id: string; detail: unknown }[];
  /** Records the fetcher's client refused, kept whole for _sync_rejected. */
  invalid: {
    endpoint: string;
    recordId: string | null;
    requestId: string | null;
    problems: readonly string[];
    record: unknown;
  }[];
  /** Runs whose detail could not be fetched, with the error as the writer rebuilds it. */
  failures: StagedFailure[];
}

export interface StagedFailure {
  id: string;
  kind: string;
  detail: string;
  endpoint: string;
  status: number | null;
  code: string | null;
  requestId: string | null;
}

const NAME = /^[A-Za-z0-9_-]{1,100}\.json\.gz$/;

export class StagingStore {
  constructor(readonly store: ObjectStore) {}

  private key(name: string): string {
    // Names come from job results: anything but our own shape is refused, so no path escapes.
    if (!NAME.test(name)) throw new Error(`not a staged file name: ${JSON.stringify(name).slice(0, 80)}`);
    return name;
  }

  async write(stem: string, batch: StagedBatch): Promise<string> {
    const name = `${stem.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 80)}.json.gz`;
    await this.store.put(this.key(name), gzipSync(JSON.stringify(batch), { level: 1 }));
    return name;
  }

  async read(name: string): Promise<StagedBatch> {
    const bytes = await this.store.get(this.key(name));
    if (bytes === null) throw new Error(`the staged file ${name} is not in ${this.store.url}`);
    return JSON.parse(gunzipSync(bytes).toString('utf8')) as StagedBatch;
  }

  async remove(name: string): Promise<void> {
    await this.store.delete([this.key(name)]);
  }

  /** Removes staged and temporary files older than `ageMs` (left by fetches nobody waited for). */
  async sweep(ageMs: number, now = Date.now()): Promise<number> {
    const old = (await this.store.list(''))
      .filter((o) => !o.key.includes('/') && (o.key.endsWith('.json.gz') || o.key.endsWith('.tmp')))
      .filter((o) => now - o.modified > ageMs)
      .map((o) => o.key);
    await this.store.delete(old);
    return old.length;
  }
}
