import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { defaultPolicyFile, parsePolicy } from '../../src/pii/index.ts';
import { ROOT } from '../support/paths.ts';

// The user guide shows the default personal-data policy whole: what it shows is the file runsync
// ships, and the file parses.

describe('the default personal-data policy in the user guide', () => {
  it('is the shipped file, whole, and the file is a policy', () => {
    const file = readFileSync(defaultPolicyFile(), 'utf8');
    const guide = readFileSync(join(ROOT, 'docs', 'user-guide.md'), 'utf8');
    const section = guide.split('\n## Personal data\n')[1]?.split('\n## ')[0] ?? '';
    const shown = /The default policy \(`policies\/pii-default\.yaml`\)[^\n]*\n[^\n]*\n\n```yaml\n([\s\S]*?)```\n/.exec(
      section,
    )?.[1];
    expect(shown).toBe(file);
    const policy = parsePolicy(file, { key: Buffer.from('k'.repeat(16)), source: 'default' });
    expect(policy.rules.map((r) => r.table)).toContain('run_messages');
  });
});
