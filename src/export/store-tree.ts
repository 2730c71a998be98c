import { randomBytes } from 'node:crypto';
import { mkdir, readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { ObjectStore } from '../storage/types.ts';
import type { Logger } from '../util/logger.ts';
import { dataKey, LATEST_KEY, type Latest, type ManifestFile, readJson, type TableManifest } from './manifest.ts';
import { publishGeneration, removeUnpublished, repairListing } from './store-publish.ts';
import type { ParquetTree } from './tree.ts';

// The Parquet tree in an object store, which has no rename. An export uploads its files under
// names of its own generation (_data/<gen>/…), which no reader knows yet, and publish() swaps
// them in at once (store-publish.ts). The export's view of the tree is the published manifests
// with its own changes over them; the bucket is not listed to learn it.

export interface StoreTreeOptions {
  graceMs: number;
  logger: Logger;
  /** Whether each table is partitioned by created_date. */
  partitioned: ReadonlyMap<string, boolean>;
  /** Local folder where the scratch folder is made (the warehouse directory). */
  scratchParent: string;
  now?: () => number;
  /** Uploads in flight at once while COPY writes the next file. */
  uploads?: number;
}

type Files = Map<string, ManifestFile>;

export async function openStoreTree(store: ObjectStore, o: StoreTreeOptions): Promise<ParquetTree> {
  const latest = await readJson<Latest>(store, LATEST_KEY);
  const published = latest?.generation ?? 0;
  const live = new Map<string, Files>();
  for (const [table, t] of Object.entries(latest?.tables ?? {})) {
    const m = await readJson<TableManifest>(store, t.manifest);
    if (m === null) throw new Error(`${store.urlOf(t.manifest)} is missing: the published Parquet tree is damaged`);
    live.set(table, new Map(m.files.map((f) => [f.path, f])));
  }
  await removeUnpublished(store, published, o.logger);
  await repairListing(store, latest, live, o.logger);
  for (const f of await readdir(o.scratchParent))
    if (f.startsWith('.export-')) await rm(join(o.scratchParent, f), { recursive: true, force: true });
  const scratch = join(o.scratchParent, `.export-${process.pid}-${randomBytes(4).toString('hex')}`);
  await mkdir(scratch, { recursive: true, mode: 0o700 });

  const generation = published + 1;
  const next = new Map<string, Files>();
  const current = (table: string): Files | undefined => next.get(table) ?? live.get(table);
  const changing = (table: string): Files => {
    const files = next.get(table) ?? new Map(live.get(table) ?? []);
    next.set(table, files);
    return files;
  };
  const inFlight = new Set<Promise<void>>();
  let failure: unknown = null;
  const settle = async () => {
    await Promise.allSettled(inFlight);
    if (failure !== null) throw failure;
  };
  const label = (table: string, path: string) => `${store.url}/${table}/${path}`;

  return {
    kind: 'store',
    url: store.url,
    scratch,
    hasTable: async (table) => current(table) !== undefined,
    hasFiles: async (table) => (current(table)?.size ?? 0) > 0,
    async partitions(table) {
      return [...new Set([...(current(table)?.keys() ?? [])].map((p) => p.split('/')[0] as string))];
    },
    async files(table, part) {
      const paths = [...(current(table)?.keys() ?? [])];
      if (part === null) return paths.filter((p) => !p.includes('/'));
      return paths.filter((p) => p.startsWith(`${part}/`)).map((p) => p.slice(part.length + 1));
    },
    async place(table, path, file, rows) {
      if (failure !== null) throw failure;
      const key = dataKey(generation, table, path);
      const bytes = (await stat(file)).size;
      const partition = Object.fromEntries(
        path
          .split('/')
          .slice(0, -1)
          .map((p) => p.split('=', 2) as [string, string]),
      );
      changing(table).set(path, { path, key, bytes, rows, partition });
      // COPY writes the next file while this one goes up.
      const upload = store
        .put(key, { file })
        .then(() => rm(file, { force: true }))
        .catch((e: unknown) => {
          failure ??= e;
        })
        .finally(() => inFlight.delete(upload));
      inFlight.add(upload);
      if (inFlight.size >= (o.uploads ?? 4)) await Promise.race(inFlight);
      if (failure !== null) throw failure;
      return label(table, path);
    },
    async remove(table, path) {
      if (!current(table)?.has(path)) return null;
      changing(table).delete(path);
      return label(table, path);
    },
    async removePartition(table, part) {
      const files = changing(table);
      for (const p of [...files.keys()]) if (p.startsWith(`${part}/`)) files.delete(p);
      return `${label(table, part)}/`;
    },
    async ensureTable(table) {
      changing(table);
    },
    async publish() {
      await settle();
      return publishGeneration(store, {
        latest,
        generation,
        live,
        next,
        partitioned: o.partitioned,
        graceMs: o.graceMs,
        now: o.now ?? Date.now,
        logger: o.logger,
      });
    },
    async close() {
      await Promise.allSettled(inFlight);
      await rm(scratch, { recursive: true, force: true });
    },
  };
}
