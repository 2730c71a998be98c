// Where runsync keeps files that several processes or other tools read: the Parquet tree and the
// worker fleet's staged details. A store is a flat space of keys ("runs/created_date=…/data.parquet")
// under a root, a local folder or an object-store prefix; callers never see which. It is handed to
// whoever needs it (the export, the staging area), never reached through a module of its own.

export interface StoredObject {
  /** Relative to the store's root, "/" between levels. */
  key: string;
  size: number;
  /** Last modified, milliseconds since 1970. */
  modified: number;
}

/** Bytes in memory, or a local file read as it is sent (large ones in parts). */
export type Body = Uint8Array | { file: string };

export interface ObjectStore {
  /** The root, as a reader names it: a folder's absolute path or s3://bucket/prefix. Never a credential. */
  readonly url: string;
  /** A key as a reader names it (an absolute path or an s3:// URL). */
  urlOf(key: string): string;
  /** Writes an object whole: a reader sees the old one or the new one, never part of one. */
  put(key: string, body: Body): Promise<void>;
  /** The object's bytes; null when there is none. */
  get(key: string): Promise<Buffer | null>;
  /** Every object whose key starts with `prefix`, at any depth. */
  list(prefix: string): Promise<StoredObject[]>;
  /** Removes objects; a key that is already gone is no error. */
  delete(keys: readonly string[]): Promise<void>;
  /** Copies an object inside the store (server-side where the store can). */
  copy(from: string, to: string): Promise<void>;
  close(): Promise<void>;
}

/** Keys are relative paths: no leading slash, no empty, "." or ".." level. */
export function checkKey(key: string): string {
  const parts = key.split('/');
  if (key === '' || parts.some((p) => p === '' || p === '.' || p === '..'))
    throw new Error(`not a storage key: ${JSON.stringify(key).slice(0, 120)}`);
  return key;
}

/** A bucket's prefix as a reader names it: s3://bucket/prefix, or s3://bucket for its root. */
export function s3Url(bucket: string, prefix: string): string {
  return `s3://${bucket}${prefix ? `/${prefix}` : ''}`;
}

/** Where a store lives, as configured: a local folder, or a bucket and a prefix in it. */
export type StorageLocation = { kind: 'folder'; dir: string } | { kind: 's3'; bucket: string; prefix: string };

/** How to reach S3 or an S3-compatible store (RUNSYNC_S3_*); the same for every s3:// location. */
export interface S3Settings {
  /** null: AWS itself. */
  endpoint: string | null;
  region: string;
  pathStyle: boolean;
  /** An AWS-format credentials file; null: the SDK's standard chain. */
  credentialsFile: string | null;
  profile: string;
}
