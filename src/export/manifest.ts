import type { ObjectStore } from '../storage/types.ts';

// What an export keeps in an object store besides the tables' own folders, all under names that
// start with "_" at the root of the prefix (Hive-style readers skip them, and none of them lies
// inside a table's folder):
//   _latest.json                     the pointer: the generation readers should read, and the
//                                    manifest of each table in it; replacing it is the swap
//   _manifests/<table>/<gen>.json    a table's live files in a generation
//   _data/<gen>/<table>/<path>       the files, each written once under its generation's name
//   _retired/<gen>.json              files generation <gen> replaced, deleted after the grace period
//   _listing.json                    the generation the tables' own folders mirror

export const FORMAT = 1;
export const LATEST_KEY = '_latest.json';
export const LISTING_KEY = '_listing.json';

export interface ManifestFile {
  /** Under the table's folder: created_date=…/part-HHMM.parquet, or data.parquet. */
  path: string;
  /** The object readers of this generation read, relative to the prefix. */
  key: string;
  bytes: number;
  rows: number;
  /** The hive partition the file belongs to ({created_date: '2026-03-01'}), for readers of the manifest. */
  partition: Record<string, string>;
}

export interface TableManifest {
  format: number;
  table: string;
  generation: number;
  partitioned: boolean;
  files: ManifestFile[];
}

export interface Latest {
  format: number;
  generation: number;
  published_at: string;
  tables: Record<string, { manifest: string; partitioned: boolean; files: number }>;
}

export interface Retired {
  format: number;
  generation: number;
  retired_at: string;
  keys: string[];
}

const gen = (g: number) => String(g).padStart(8, '0');
export const dataKey = (g: number, table: string, path: string) => `_data/${gen(g)}/${table}/${path}`;
export const manifestKey = (table: string, g: number) => `_manifests/${table}/${gen(g)}.json`;
export const retiredKey = (g: number) => `_retired/${gen(g)}.json`;

/** The generation an internal key belongs to; null for any other key. */
export function generationOf(key: string): number | null {
  const m = /^(?:_data\/(\d{8})\/|_manifests\/[^/]+\/(\d{8})\.json$|_retired\/(\d{8})\.json$)/.exec(key);
  return m ? Number(m[1] ?? m[2] ?? m[3]) : null;
}

export async function readJson<T>(store: ObjectStore, key: string): Promise<T | null> {
  const bytes = await store.get(key);
  if (bytes === null) return null;
  try {
    return JSON.parse(bytes.toString('utf8')) as T;
  } catch {
    throw new Error(`${store.urlOf(key)} is not JSON: the Parquet tree's bookkeeping is damaged`);
  }
}

export async function writeJson(store: ObjectStore, key: string, value: unknown): Promise<void> {
  await store.put(key, Buffer.from(`${JSON.stringify(value, null, 1)}\n`));
}

/** Runs `fn` over `items`, at most `limit` at once; the first failure is thrown once all have stopped. */
export async function eachLimit<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let stop = false;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (!stop && next < items.length)
      await fn(items[next++] as T).catch((e: unknown) => {
        stop = true;
        throw e;
      });
  });
  const results = await Promise.allSettled(lanes);
  const failed = results.find((r) => r.status === 'rejected');
  if (failed) throw (failed as PromiseRejectedResult).reason;
}
