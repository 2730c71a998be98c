import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readdir, rename, rm, rmdir } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { type ShareGroup, shareDir, shareFile } from '../util/file-share.ts';
import { DATA_FILE } from './tables.ts';
import type { ParquetTree } from './tree.ts';

// The Parquet tree in a local folder. COPY writes each file in a hidden staging folder inside the
// tree (one file system, so a rename moves it), and the file is renamed over the old one: a reader
// sees the old file or the new one, never part of one. Results name files relative to the
// warehouse directory (parquet/runs/created_date=…/data.parquet).

export async function openFolderTree(
  root: string,
  warehouseDir: string,
  share: ShareGroup | null,
): Promise<ParquetTree> {
  await mkdir(root, { recursive: true });
  await shareDir(root, share);
  // An export killed half way leaves its staging folder behind; the warehouse lock makes this
  // export the only one, so any staging folder found is such a leftover.
  for (const f of await readdir(root))
    if (f.startsWith('.staging-')) await rm(join(root, f), { recursive: true, force: true });
  const scratch = join(root, `.staging-${process.pid}-${randomBytes(4).toString('hex')}`);
  await mkdir(scratch, { recursive: true });
  const label = (path: string) => relative(warehouseDir, path);
  const names = async (dir: string) => (existsSync(dir) ? await readdir(dir) : []);

  return {
    kind: 'folder',
    url: root,
    scratch,
    hasTable: async (table) => existsSync(join(root, table)),
    async hasFiles(table) {
      const dir = join(root, table);
      if (!existsSync(dir)) return false;
      if (existsSync(join(dir, DATA_FILE))) return true;
      for (const part of await readdir(dir)) {
        const files = await readdir(join(dir, part)).catch(() => []);
        if (files.some((f) => f.endsWith('.parquet'))) return true;
      }
      return false;
    },
    partitions: (table) => names(join(root, table)),
    files: (table, part) => names(part === null ? join(root, table) : join(root, table, part)),
    async place(table, path, file) {
      const target = join(root, table, path);
      const dir = dirname(target);
      await mkdir(dir, { recursive: true });
      await shareDir(join(root, table), share);
      await shareDir(dir, share);
      await shareFile(file, share);
      await rename(file, target);
      return label(target);
    },
    async remove(table, path) {
      const target = join(root, table, path);
      if (!existsSync(target)) return null;
      await rm(target);
      await rmdir(dirname(target)).catch(() => undefined);
      return label(target);
    },
    async removePartition(table, part) {
      await rm(join(root, table, part), { recursive: true, force: true });
      return label(join(root, table, part, DATA_FILE));
    },
    async ensureTable(table) {
      await mkdir(join(root, table), { recursive: true });
      await shareDir(join(root, table), share);
    },
    publish: async () => null,
    close: () => rm(scratch, { recursive: true, force: true }),
  };
}
