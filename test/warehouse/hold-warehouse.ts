// Run as a separate process by the lock tests: opens the warehouse, says "ready", and holds it
// until it reads "release" on stdin.
import { createInterface } from 'node:readline';
import { openWarehouse } from '../../src/warehouse/open.ts';

const wh = await openWarehouse(process.argv[2] as string);
process.stdout.write('ready\n');
for await (const line of createInterface({ input: process.stdin })) {
  if (line.trim() === 'release') break;
}
await wh.close();
process.stdout.write('released\n');
