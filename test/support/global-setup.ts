import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './paths.ts';

// Tests start the CLI as users run it, from the build in dist/ (faster to start than compiling the
// sources in every child). The build is made again when a source is newer than it.

function newest(dir: string): number {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    latest = Math.max(latest, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
  }
  return latest;
}

export default function setup(): void {
  const built = join(ROOT, 'dist', 'src', 'cli', 'main.js');
  const sources = Math.max(...['src', 'jobs', 'schemas'].map((d) => newest(join(ROOT, d))));
  if (existsSync(built) && statSync(built).mtimeMs >= sources && newest(join(ROOT, 'dist')) >= sources) return;
  execFileSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: 'inherit' });
}
