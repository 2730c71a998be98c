import { accessSync, constants } from 'node:fs';
import { userInfo } from 'node:os';
import { basename, resolve } from 'node:path';

// The warehouse directory, from RUNSYNC_WAREHOUSE_DIR (default ./warehouse). The commands that
// only touch the warehouse (export, rebuild) need nothing else from the configuration.
export function warehouseDirFrom(env: NodeJS.ProcessEnv, cwd: string = process.cwd()): string {
  const dir = env.RUNSYNC_WAREHOUSE_DIR?.trim();
  return resolve(cwd, dir ? dir : './warehouse');
}

/** What the reading commands say when the directory holds no warehouse yet. */
export function noWarehouseYet(file: string): string {
  return `runsync: there is no warehouse at ${file} yet; run \`runsync sync\` (or \`runsync demo\`) first`;
}

export type Access = 'readable' | 'missing' | 'denied';

/**
 * Whether this user can read `file`. A directory above it this user may not enter hides whether
 * the file is there at all: that is a permission problem too, not a missing warehouse.
 */
export function accessOf(file: string): Access {
  try {
    accessSync(file, constants.R_OK);
    return 'readable';
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return code === 'ENOENT' || code === 'ENOTDIR' ? 'missing' : 'denied';
  }
}

function whoAmI(): string {
  try {
    return userInfo().username;
  } catch {
    return `uid ${process.getuid?.() ?? '?'}`;
  }
}

/**
 * The line for a file this user may not read. runsync.duckdb is always its owner's alone; the
 * Parquet tree and analytics.duckdb are opened to a group by RUNSYNC_SHARE_GROUP where runsync syncs.
 */
export function cannotRead(file: string): string {
  const denied = `runsync: cannot read ${file}: permission denied for this user (${whoAmI()})`;
  if (basename(file) === 'runsync.duckdb')
    return (
      `${denied}; runsync.duckdb is for the user that syncs alone. With RUNSYNC_SHARE_GROUP set where it syncs, ` +
      'the members of that group read analytics.duckdb and the Parquet tree: `runsync query --analytics "…"`, ' +
      '`runsync report --analytics`'
    );
  return (
    `${denied}; the user that syncs shares the Parquet tree, analytics.duckdb and the report with a group ` +
    'by setting RUNSYNC_SHARE_GROUP: ask for it to be a group this user is in'
  );
}

/** The line for a file that cannot be read, missing or denied; null when it can be read. */
export function unreadable(file: string, missing: (file: string) => string = noWarehouseYet): string | null {
  const access = accessOf(file);
  return access === 'readable' ? null : access === 'missing' ? missing(file) : cannotRead(file);
}
