import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { RESOURCES } from '../resources/registry.ts';
import type { ArchiveName } from '../resources/types.ts';
import type { Micros } from '../util/timestamp.ts';

// Where raw payloads live: <warehouse>/raw/<endpoint>/<YYYY-MM-DD>/<time>-<pid>-<random>.parquet.
// Every part of a path comes from this module (a fixed endpoint name, our clock, our process),
// never from the API, so no id, however hostile, can steer a path. Day and name come from when
// the file was written (UTC), so names sort in the order the loads committed.

export type ArchiveEndpoint = ArchiveName;
export const ARCHIVE_ENDPOINTS: readonly ArchiveEndpoint[] = RESOURCES.map((r) => r.archive);

export const RAW_DIR = 'raw';
const DAY = /^\d{4}-\d{2}-\d{2}$/;
const NAME = /^\d{8}T\d{12}Z-\d+-[0-9a-f]{8}\.parquet$/;

export function rawDir(warehouseDir: string): string {
  return join(warehouseDir, RAW_DIR);
}

export function isArchiveEndpoint(name: string): name is ArchiveEndpoint {
  return (ARCHIVE_ENDPOINTS as readonly string[]).includes(name);
}

/** A new file's directory and name, for a file written at `at`. */
export function newArchivePath(
  warehouseDir: string,
  endpoint: ArchiveEndpoint,
  at: Micros,
): { dir: string; name: string } {
  if (!isArchiveEndpoint(endpoint)) throw new Error(`not an archive endpoint: ${String(endpoint)}`);
  const iso = new Date(Math.floor(at / 1000)).toISOString(); // YYYY-MM-DDTHH:MM:SS.mmmZ
  const micros = String(((at % 1_000_000) + 1_000_000) % 1_000_000).padStart(6, '0');
  const date = `${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}`;
  const time = `${iso.slice(11, 13)}${iso.slice(14, 16)}${iso.slice(17, 19)}`;
  const stamp = `${date}T${time}${micros}Z`;
  return {
    dir: join(rawDir(warehouseDir), endpoint, iso.slice(0, 10)),
    name: `${stamp}-${process.pid}-${randomBytes(4).toString('hex')}.parquet`,
  };
}

/** Every finished archive file of an endpoint, oldest first (files being written are skipped). */
export async function listArchiveFiles(warehouseDir: string, endpoint: ArchiveEndpoint): Promise<string[]> {
  const base = join(rawDir(warehouseDir), endpoint);
  if (!existsSync(base)) return [];
  const out: string[] = [];
  for (const day of (await readdir(base)).filter((d) => DAY.test(d)).sort()) {
    const files = (await readdir(join(base, day))).filter((f) => NAME.test(f));
    files.sort(compareNames);
    for (const f of files) out.push(join(base, day, f));
  }
  return out;
}

function compareNames(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
