import type { ObjectStore } from '../storage/types.ts';
import type { Logger } from '../util/logger.ts';
import {
  eachLimit,
  FORMAT,
  generationOf,
  LATEST_KEY,
  type Latest,
  LISTING_KEY,
  type ManifestFile,
  manifestKey,
  type Retired,
  readJson,
  retiredKey,
  type TableManifest,
  writeJson,
} from './manifest.ts';

// Publishing a generation in an object store, in an order that leaves readers a whole state at
// every step, whatever step an export dies at:
//  1. the changed tables' manifests, and the record of what the generation retires, under the
//     generation's own names: no reader knows them yet;
//  2. _latest.json, replaced in one PUT: the swap, after which readers of the pointer see the
//     new generation whole (a PUT is atomic in S3);
//  3. the tables' own folders, for readers that list files: each changed file copied over its
//     stable name (a run lies in one file, by its created time, so none is ever seen twice), files
//     with no rows left deleted, then _listing.json; an export that dies here has the next one
//     finish it (store-tree.ts);
//  4. files retired more than the grace period ago deleted, so a query that read an older
//     pointer finishes; a file still live is never deleted.

export interface Publication {
  latest: Latest | null;
  generation: number;
  live: ReadonlyMap<string, Map<string, ManifestFile>>;
  next: ReadonlyMap<string, Map<string, ManifestFile>>;
  partitioned: ReadonlyMap<string, boolean>;
  graceMs: number;
  now: () => number;
  logger: Logger;
}

/** Publishes the changes, if any; returns the generation readers now read. */
export async function publishGeneration(store: ObjectStore, p: Publication): Promise<number> {
  const changed = [...p.next.entries()].filter(([table, files]) => differs(p.live.get(table), files));
  if (changed.length === 0) {
    await collect(store, p, p.latest, p.live);
    return p.latest?.generation ?? 0;
  }
  const tables = { ...(p.latest?.tables ?? {}) };
  const retired: string[] = [];
  for (const [table, files] of changed) {
    const partitioned = p.partitioned.get(table) ?? false;
    const key = manifestKey(table, p.generation);
    const manifest: TableManifest = {
      format: FORMAT,
      table,
      generation: p.generation,
      partitioned,
      files: [...files.values()].sort((a, b) => a.path.localeCompare(b.path)),
    };
    await writeJson(store, key, manifest);
    const keep = new Set([...files.values()].map((f) => f.key));
    for (const f of p.live.get(table)?.values() ?? []) if (!keep.has(f.key)) retired.push(f.key);
    const before = tables[table]?.manifest;
    if (before) retired.push(before);
    tables[table] = { manifest: key, partitioned, files: files.size };
  }
  const at = new Date(p.now()).toISOString();
  if (retired.length > 0) {
    const record: Retired = { format: FORMAT, generation: p.generation, retired_at: at, keys: retired };
    await writeJson(store, retiredKey(p.generation), record);
  }
  const latest: Latest = { format: FORMAT, generation: p.generation, published_at: at, tables };
  await writeJson(store, LATEST_KEY, latest);
  p.logger.info({ generation: p.generation, tables: changed.length, retired: retired.length }, 'parquet published');

  for (const [table, files] of changed) {
    const before = p.live.get(table);
    const copies = [...files.values()].filter((f) => before?.get(f.path)?.key !== f.key);
    await eachLimit(copies, 8, (f) => store.copy(f.key, `${table}/${f.path}`));
    const gone = [...(before?.keys() ?? [])].filter((path) => !files.has(path)).map((path) => `${table}/${path}`);
    await store.delete(gone);
  }
  await writeJson(store, LISTING_KEY, { format: FORMAT, generation: p.generation });
  await collect(store, p, latest, new Map([...p.live, ...changed]));
  return p.generation;
}

function differs(before: Map<string, ManifestFile> | undefined, after: Map<string, ManifestFile>): boolean {
  if (!before || before.size !== after.size) return true;
  for (const [path, f] of after) if (before.get(path)?.key !== f.key) return true;
  return false;
}

/** Deletes what generations up to the published one retired, once the grace period has passed. */
async function collect(
  store: ObjectStore,
  p: Publication,
  latest: Latest | null,
  files: ReadonlyMap<string, Map<string, ManifestFile>>,
): Promise<void> {
  const published = latest?.generation ?? 0;
  const live = new Set(Object.values(latest?.tables ?? {}).map((t) => t.manifest));
  for (const table of files.values()) for (const f of table.values()) live.add(f.key);
  for (const record of await store.list('_retired/')) {
    const g = generationOf(record.key);
    if (g === null || g > published) continue;
    const r = await readJson<Retired>(store, record.key);
    if (r === null || p.now() - Date.parse(r.retired_at) < p.graceMs) continue;
    await store.delete(r.keys.filter((k) => !live.has(k)));
    await store.delete([record.key]);
    p.logger.info({ generation: g, objects: r.keys.length }, 'parquet: files past their grace period deleted');
  }
}

/** Files, manifests and records of generations never published: an export that died left them. */
export async function removeUnpublished(store: ObjectStore, published: number, logger: Logger): Promise<void> {
  const stale = (await store.list('_')).map((o) => o.key).filter((k) => (generationOf(k) ?? 0) > published);
  if (stale.length === 0) return;
  logger.info({ objects: stale.length }, 'removing what an interrupted export left unpublished');
  await store.delete(stale);
}

/**
 * The tables' own folders mirror the published generation once publishing ends; an export that
 * died between the swap and the end of the mirroring left some behind, copied again here.
 */
export async function repairListing(
  store: ObjectStore,
  latest: Latest | null,
  live: ReadonlyMap<string, Map<string, ManifestFile>>,
  logger: Logger,
): Promise<void> {
  if (latest === null) return;
  const mirrored = (await readJson<{ generation: number }>(store, LISTING_KEY))?.generation ?? 0;
  if (mirrored >= latest.generation) return;
  const tables = Object.entries(latest.tables)
    .filter(([, t]) => (generationOf(t.manifest) ?? 0) > mirrored)
    .map(([name]) => name);
  logger.info({ tables, generation: latest.generation }, 'finishing the mirror of an interrupted publication');
  for (const table of tables) {
    const files = live.get(table) ?? new Map<string, ManifestFile>();
    await eachLimit([...files.values()], 8, (f) => store.copy(f.key, `${table}/${f.path}`));
    const extra = (await store.list(`${table}/`))
      .map((x) => x.key)
      .filter((k) => !files.has(k.slice(table.length + 1)));
    await store.delete(extra);
  }
  await writeJson(store, LISTING_KEY, { format: FORMAT, generation: latest.generation });
}
