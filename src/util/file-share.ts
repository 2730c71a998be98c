import { chmod, chown } from 'node:fs/promises';

// Giving what runsync writes for readers (the Parquet tree, analytics.duckdb, the report) to the
// group of RUNSYNC_SHARE_GROUP: directories rwxr-x---, files rw-r-----, group set. Everything else
// (runsync.duckdb, the raw archive, staged details) keeps the owner-only modes it is created with.
// Without a share group these do nothing.

export interface ShareGroup {
  name: string;
  gid: number;
}

export async function shareDir(path: string, share: ShareGroup | null | undefined): Promise<void> {
  if (!share) return;
  await chown(path, -1, share.gid);
  await chmod(path, 0o750);
}

export async function shareFile(path: string, share: ShareGroup | null | undefined): Promise<void> {
  if (!share) return;
  await chown(path, -1, share.gid);
  await chmod(path, 0o640);
}
