import { randomBytes } from 'node:crypto';
import { copyFile, mkdir, readdir, readFile, rename, rm, rmdir, stat, writeFile } from 'node:fs/promises';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { type ShareGroup, shareDir, shareFile } from '../util/file-share.ts';
import { type Body, checkKey, type ObjectStore, type StoredObject } from './types.ts';

// A store in a local folder (or a volume several machines mount). An object is written beside its
// place under a hidden temporary name and renamed over it, so a reader sees it whole; a writer
// that dies leaves only the temporary file, which list() shows (for sweeping) as any other.

export interface LocalStoreOptions {
  /** Modes of what is created (default: the owner's alone, as for staged details). */
  dirMode?: number;
  fileMode?: number;
  /** Gives every folder and file to this group, readable (RUNSYNC_SHARE_GROUP). */
  share?: ShareGroup | null;
}

export class LocalStore implements ObjectStore {
  readonly url: string;

  constructor(
    dir: string,
    private readonly o: LocalStoreOptions = {},
  ) {
    this.url = resolve(dir);
  }

  urlOf(key: string): string {
    return join(this.url, ...checkKey(key).split('/'));
  }

  async put(key: string, body: Body): Promise<void> {
    const target = this.urlOf(key);
    const temp = await this.beside(target);
    try {
      if (body instanceof Uint8Array) await writeFile(temp, body, { mode: this.o.fileMode ?? 0o600 });
      else await copyFile(body.file, temp);
      await this.publish(temp, target);
    } catch (e) {
      await rm(temp, { force: true });
      throw e;
    }
  }

  async get(key: string): Promise<Buffer | null> {
    try {
      return await readFile(this.urlOf(key));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw e;
    }
  }

  async list(prefix: string): Promise<StoredObject[]> {
    const out: StoredObject[] = [];
    const walk = async (dir: string): Promise<void> => {
      let entries: import('node:fs').Dirent[];
      try {
        entries = await readdir(dir, { withFileTypes: true });
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
        throw e;
      }
      for (const d of entries) {
        const path = join(dir, d.name);
        const key = relative(this.url, path).split(sep).join('/');
        if (d.isDirectory()) {
          if (key.startsWith(prefix) || prefix.startsWith(`${key}/`)) await walk(path);
        } else if (d.isFile() && key.startsWith(prefix)) {
          const s = await stat(path).catch(() => null);
          if (s) out.push({ key, size: s.size, modified: s.mtimeMs });
        }
      }
    };
    await walk(this.url);
    return out.sort((a, b) => a.key.localeCompare(b.key));
  }

  async delete(keys: readonly string[]): Promise<void> {
    for (const key of keys) {
      const path = this.urlOf(key);
      await rm(path, { force: true });
      // Empty folders left behind would read as empty partitions to a reader listing folders.
      for (let dir = dirname(path); dir.startsWith(`${this.url}${sep}`); dir = dirname(dir)) {
        const removed = await rmdir(dir).then(
          () => true,
          () => false,
        );
        if (!removed) break;
      }
    }
  }

  async copy(from: string, to: string): Promise<void> {
    await this.put(to, { file: this.urlOf(from) });
  }

  async close(): Promise<void> {}

  private async beside(target: string): Promise<string> {
    const dir = dirname(target);
    await this.makeDirs(dir);
    return join(dir, `.${basename(target)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  }

  private async makeDirs(dir: string): Promise<void> {
    await mkdir(dir, { recursive: true, mode: this.o.dirMode ?? 0o700 });
    if (!this.o.share) return;
    for (let d = dir; d.startsWith(this.url); d = dirname(d)) {
      await shareDir(d, this.o.share);
      if (d === this.url) break;
    }
  }

  private async publish(temp: string, target: string): Promise<void> {
    await shareFile(temp, this.o.share);
    await rename(temp, target);
  }
}
