import type { ShareGroup } from '../util/file-share.ts';
import type { Logger } from '../util/logger.ts';
import { LocalStore } from './local.ts';
import { S3Store } from './s3.ts';
import type { ObjectStore, S3Settings, StorageLocation } from './types.ts';

// The store a configured location names. Each caller opens its own and closes it when done: an
// S3 store holds a connection pool.

export interface OpenStoreOptions {
  logger: Logger;
  /** For a folder: the group its files are given to (RUNSYNC_SHARE_GROUP); null: the owner's alone. */
  share?: ShareGroup | null;
  /** For S3: bytes per part of a multipart upload. */
  partSize?: number;
}

export function openStore(location: StorageLocation, s3: S3Settings, o: OpenStoreOptions): ObjectStore {
  if (location.kind === 'folder') return new LocalStore(location.dir, { share: o.share ?? null });
  return new S3Store({
    ...s3,
    bucket: location.bucket,
    prefix: location.prefix,
    logger: o.logger,
    ...(o.partSize ? { partSize: o.partSize } : {}),
  });
}

export function describeLocation(location: StorageLocation): string {
  return location.kind === 'folder'
    ? location.dir
    : `s3://${location.bucket}${location.prefix ? `/${location.prefix}` : ''}`;
}
