import type { ShareGroup } from '../util/file-share.ts';
import type { Logger } from '../util/logger.ts';
import { LocalStore } from './local.ts';
import type { S3StoreOptions } from './s3.ts';
import { checkKey, type ObjectStore, type S3Settings, type StorageLocation, s3Url } from './types.ts';

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
  return lazyS3Store({
    ...s3,
    bucket: location.bucket,
    prefix: location.prefix,
    logger: o.logger,
    ...(o.partSize ? { partSize: o.partSize } : {}),
  });
}

/**
 * An S3 store whose SDK is loaded by its first request: loaded at start, the SDK would weigh on
 * the memory of every command, also of those whose warehouse and Parquet tree are folders.
 */
function lazyS3Store(options: S3StoreOptions): ObjectStore {
  let loaded: Promise<ObjectStore> | null = null;
  const store = () => {
    loaded ??= import('./s3.ts').then((m) => new m.S3Store(options));
    return loaded;
  };
  const url = s3Url(options.bucket, options.prefix);
  return {
    url,
    urlOf: (key) => `${url}/${checkKey(key)}`,
    put: async (key, body) => (await store()).put(key, body),
    get: async (key) => (await store()).get(key),
    list: async (prefix) => (await store()).list(prefix),
    delete: async (keys) => (await store()).delete(keys),
    copy: async (from, to) => (await store()).copy(from, to),
    close: async () => {
      if (loaded) await (await loaded).close();
    },
  };
}

export function describeLocation(location: StorageLocation): string {
  return location.kind === 'folder' ? location.dir : s3Url(location.bucket, location.prefix);
}
