#!/usr/bin/env node
// Fails when a tracked source file has a line wider than the formatter's width. The formatter
// wraps code but leaves long strings, comments and SQL alone; this catches those.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

const WIDTH = 120;
const SOURCE = /\.(ts|mjs|js|json|sql|sh)$|^\.ci\/run$/;
const SKIP = new Set(['package-lock.json', 'src/api/api-types.ts']);

const files = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard'], { encoding: 'utf8' })
  .split('\n')
  .filter((f) => f && SOURCE.test(f) && !SKIP.has(f));
let wide = 0;
for (const file of files) {
  let text;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    continue;
  }
  text.split('\n').forEach((line, i) => {
    if ([...line].length > WIDTH) {
      wide++;
      console.log(`${file}:${i + 1}: ${[...line].length} characters (at most ${WIDTH})`);
    }
  });
}
if (wide) {
  console.log(`${wide} line(s) wider than ${WIDTH} characters`);
  process.exit(1);
}
