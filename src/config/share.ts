import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { ShareGroup } from '../util/file-share.ts';
import { ConfigError } from './error.ts';

// RUNSYNC_SHARE_GROUP: a group (name or number) whose members may read what runsync writes for
// readers, the Parquet tree and analytics.duckdb, such as a BI tool running as another user.
// Unset, everything runsync writes is for its owner alone.

type Env = Readonly<Record<string, string | undefined>>;

export function shareGroup(env: Env, lookup: (name: string) => number | null = groupId): ShareGroup | null {
  const raw = env.RUNSYNC_SHARE_GROUP?.trim();
  if (!raw) return null;
  const gid = /^\d+$/.test(raw) ? Number(raw) : lookup(raw);
  if (gid === null) throw new ConfigError('RUNSYNC_SHARE_GROUP', `there is no group named "${raw}" on this machine`);
  const uid = process.getuid?.() ?? 0;
  const groups = process.getgroups?.() ?? [];
  // Only root, or a member, may give a file to a group.
  if (uid !== 0 && !groups.includes(gid))
    throw new ConfigError(
      'RUNSYNC_SHARE_GROUP',
      `this user is not a member of group ${raw}, so it cannot give files to it; add it to the group`,
    );
  return { name: raw, gid };
}

/** A group's id: from /etc/group, else from the system's group database (getent). */
function groupId(name: string): number | null {
  try {
    for (const line of readFileSync('/etc/group', 'utf8').split('\n')) {
      const [n, , gid] = line.split(':');
      if (n === name && gid !== undefined && /^\d+$/.test(gid)) return Number(gid);
    }
  } catch {
    // No /etc/group: ask getent.
  }
  try {
    const gid = execFileSync('getent', ['group', name], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
      .split(':')[2]
      ?.trim();
    return gid && /^\d+$/.test(gid) ? Number(gid) : null;
  } catch {
    return null;
  }
}
