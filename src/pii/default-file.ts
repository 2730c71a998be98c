import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

// Where the default policy runsync ships lies: policies/pii-default.yaml beside the package.

/** From src/pii/ in the sources, or dist/src/pii/ once built. */
export function defaultPolicyFile(): string {
  for (const up of ['../../policies/', '../../../policies/']) {
    const file = fileURLToPath(new URL(`${up}pii-default.yaml`, import.meta.url));
    if (existsSync(file)) return file;
  }
  throw new Error('cannot find the default personal-data policy (policies/pii-default.yaml) beside runsync');
}
