import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { INTERNAL_NAMES } from '../../src/config/settings.ts';

// The README is a newcomer's page: its settings table names every setting runsync reads, once;
// what a newcomer needs first is on its first screens; and no link of the README or of docs/
// points at a page or a heading that is not there.

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

async function sources(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, e.name);
    if (e.isDirectory()) out.push(...(await sources(path)));
    else if (e.name.endsWith('.ts')) out.push(path);
  }
  return out;
}

/** Every setting named as a string in src/: what runsync reads from the environment. */
async function settingsRead(): Promise<string[]> {
  const names = new Set<string>();
  for (const f of await sources(join(ROOT, 'src'))) {
    const text = await readFile(f, 'utf8');
    for (const m of text.matchAll(/'(RUNSYNC_[A-Z0-9_]+|REDIS_URL|LOG_LEVEL)'/g)) names.add(m[1] as string);
  }
  // The launcher's mark and the test and bench switches are not settings.
  return [...names].filter((n) => !INTERNAL_NAMES.includes(n)).sort();
}

/** GitHub's anchor for a heading. */
const slug = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');

const anchorsOf = (markdown: string) =>
  new Set(
    markdown
      .split('\n')
      .filter((l) => /^#{1,6} /.test(l))
      .map((l) => slug(l.replace(/^#+ /, ''))),
  );

describe('README.md', () => {
  it('has one row in its settings table for every setting runsync reads', async () => {
    const readme = await readFile(join(ROOT, 'README.md'), 'utf8');
    const section = readme.split('\n## Settings\n')[1]?.split('\n## ')[0] ?? '';
    const rows = section.split('\n').filter((l) => l.startsWith('| `'));
    const read = await settingsRead();
    expect(read.length).toBeGreaterThan(30);
    for (const name of read) {
      const named = rows.filter((r) => (r.split(' | ')[0] ?? '').includes(`\`${name}\``));
      expect(named.length, `${name} should have one row in the README's settings table`).toBe(1);
    }
  });

  it('puts the set-up first and what a newcomer needs on its first screens', async () => {
    const lines = (await readFile(join(ROOT, 'README.md'), 'utf8')).split('\n');
    expect(lines.length).toBeLessThan(300);
    const setUp = lines.slice(lines.indexOf('## Set-up'), lines.indexOf('## Set-up') + 8).join('\n');
    expect(setUp).toContain('npm install && npx runsync demo');
    expect(setUp).toContain('npm test');
    const top = lines.slice(0, 100).join('\n');
    for (const needed of ['api:runs:read', 'first sync', 'per run', 'runsync query', 'runsync report'])
      expect(top, `"${needed}" should be within the README's first 100 lines`).toContain(needed);
  });
});

describe('links of the README and docs/', () => {
  it('point at pages and headings that exist', async () => {
    const pages = [join(ROOT, 'README.md'), ...(await readdir(join(ROOT, 'docs'))).map((f) => join(ROOT, 'docs', f))];
    const text = new Map<string, string>();
    for (const p of pages.filter((p) => p.endsWith('.md'))) text.set(p, await readFile(p, 'utf8'));
    const broken: string[] = [];
    for (const [page, markdown] of text) {
      for (const m of markdown.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1] as string;
        if (/^[a-z]+:/.test(target)) continue;
        const [file, anchor] = target.split('#') as [string, string | undefined];
        const path = file === '' ? page : join(dirname(page), file);
        const linked = text.get(path);
        const label = `${relative(ROOT, page)} → ${target}`;
        if (linked === undefined) broken.push(`${label}: no such page`);
        else if (anchor && !anchorsOf(linked).has(anchor)) broken.push(`${label}: no such heading`);
      }
    }
    expect(broken).toEqual([]);
  });
});
