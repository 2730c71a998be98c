import { resolve } from 'node:path';

// The warehouse directory, from RUNSYNC_WAREHOUSE_DIR (default ./warehouse). The commands that
// only touch the warehouse (export, rebuild) need nothing else from the configuration.
export function warehouseDirFrom(env: NodeJS.ProcessEnv, cwd: string = process.cwd()): string {
  const dir = env.RUNSYNC_WAREHOUSE_DIR?.trim();
  return resolve(cwd, dir ? dir : './warehouse');
}
