import { resolve } from 'node:path';

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
