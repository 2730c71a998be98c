import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';

// Fetchers hand run details to the writer through files, never through Redis: a staged file is
// written aside and renamed into place (so the writer never reads half of one), read by the
// writer, and removed only once its rows are committed. In a deployment on several machines the
// directory is a shared volume.

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
  constructor(readonly dir: string) {}

  private path(name: string): string {
    // Names come from job results: anything but our own shape is refused, so no path escapes.
    if (!NAME.test(name)) throw new Error(`not a staged file name: ${JSON.stringify(name).slice(0, 80)}`);
    return join(this.dir, name);
  }

  async write(stem: string, batch: StagedBatch): Promise<string> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const name = `${stem.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 80)}.json.gz`;
    const target = this.path(name);
    const temp = join(this.dir, `.${name}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
    await writeFile(temp, gzipSync(JSON.stringify(batch), { level: 1 }), { mode: 0o600 });
    await rename(temp, target);
    return name;
  }

  async read(name: string): Promise<StagedBatch> {
    return JSON.parse(gunzipSync(await readFile(this.path(name))).toString('utf8')) as StagedBatch;
  }

  async remove(name: string): Promise<void> {
    await rm(this.path(name), { force: true });
  }

  /** Removes staged and temporary files older than `ageMs` (left by fetches nobody waited for). */
  async sweep(ageMs: number, now = Date.now()): Promise<number> {
    let removed = 0;
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch {
      return 0;
    }
    for (const n of names) {
      if (!n.endsWith('.json.gz') && !n.endsWith('.tmp')) continue;
      const p = join(this.dir, n);
      const s = await stat(p).catch(() => null);
      if (s && now - s.mtimeMs > ageMs) {
        await rm(p, { force: true });
        removed++;
      }
    }
    return removed;
  }
}
