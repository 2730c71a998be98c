import { chmodSync, chownSync, closeSync, mkdirSync, openSync, statSync, unlinkSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { ShareGroup } from '../util/file-share.ts';
import { ConfigError } from './error.ts';

// A directory runsync writes to (the warehouse, the staging directory) is checked at start: made
// if missing, one level at a time, and written to once. A directory that cannot be made or written
// (read-only, another user's, inside /proc, where Node's recursive mkdir never returns) stops the
// command with one line naming the setting, before any request is sent.

export function ensureWritableDir(dir: string, setting: string): void {
  const target = resolve(dir);
  const missing: string[] = [];
  for (let at = target; ; ) {
    try {
      if (!statSync(at).isDirectory()) throw new ConfigError(setting, `${at} is not a directory`);
      break;
    } catch (e) {
      if (e instanceof ConfigError) throw e;
      const code = codeOf(e);
      if (code !== 'ENOENT') throw new ConfigError(setting, `cannot reach ${at} (${code})`);
      missing.unshift(at);
      const up = dirname(at);
      if (up === at) throw new ConfigError(setting, `cannot reach ${at} (${code})`);
      at = up;
    }
  }
  for (const d of missing) {
    try {
      mkdirSync(d, { mode: 0o700 });
    } catch (e) {
      if (codeOf(e) !== 'EEXIST')
        throw new ConfigError(setting, `cannot create ${d} (${codeOf(e)}); it must be a directory this user can write`);
    }
  }
  const probe = join(target, `.runsync-write-check-${process.pid}-${Date.now()}`);
  try {
    closeSync(openSync(probe, 'wx', 0o600));
    unlinkSync(probe);
  } catch (e) {
    throw new ConfigError(
      setting,
      `cannot write in ${target} (${describe(e)}); it must be a directory this user can write`,
    );
  }
}

const MEANING: Record<string, string> = {
  EACCES: 'permission denied',
  EPERM: 'not permitted',
  EROFS: 'read-only file system',
  ENOSPC: 'no space left on the device',
  EDQUOT: 'disk quota exceeded',
};

function describe(e: unknown): string {
  const code = codeOf(e);
  return MEANING[code] ? `${code}: ${MEANING[code]}` : code;
}

function codeOf(e: unknown): string {
  return (e as NodeJS.ErrnoException).code ?? (e as Error).message;
}

/**
 * The warehouse directory, checked as above; with a share group, given to it (rwxr-x---) so that
 * its members reach the Parquet tree and analytics.duckdb inside. What else it holds keeps its
 * owner-only modes.
 */
export function prepareWarehouseDir(dir: string, share: ShareGroup | null): void {
  ensureWritableDir(dir, 'RUNSYNC_WAREHOUSE_DIR');
  if (!share) return;
  try {
    chownSync(dir, -1, share.gid);
    chmodSync(dir, 0o750);
  } catch (e) {
    throw new ConfigError('RUNSYNC_SHARE_GROUP', `cannot give ${resolve(dir)} to group ${share.name} (${codeOf(e)})`);
  }
}
