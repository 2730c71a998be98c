#!/usr/bin/env node
// The CLI is compiled to dist/ by `npm install` (the prepare script); `npm start -- …` runs the sources.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const entry = new URL('../dist/src/cli/main.js', import.meta.url);
if (!existsSync(fileURLToPath(entry))) {
  process.stderr.write('runsync: dist/ is missing; run `npm install` (or `npm run build`) first\n');
  process.exit(2);
}
const { main } = await import(entry.href);
process.exitCode = await main(process.argv.slice(2));
