// One error class per way a store can fail, and one function deciding what a caller does about
// it. Messages name the store, the operation, the key and the store's error code, never a
// credential (a store's own message may quote the access key id, so it is not repeated).

export type StorageOp = 'put' | 'get' | 'list' | 'delete' | 'copy';

export interface StorageErrorInfo {
  store: string;
  op: StorageOp;
  key: string | null;
  /** The store's error code (SlowDown, ExpiredToken, ...) or the system's (ECONNREFUSED). */
  code: string | null;
  status: number | null;
}

export abstract class StorageError extends Error {
  readonly store: string;
  readonly op: StorageOp;
  readonly key: string | null;
  readonly code: string | null;
  readonly status: number | null;

  constructor(info: StorageErrorInfo, what: string, options?: ErrorOptions) {
    const where = info.key === null ? info.store : `${info.store}/${info.key}`;
    const code = [info.code, info.status === null ? null : `HTTP ${info.status}`].filter(Boolean).join(', ');
    super(`${info.op} ${where}: ${what}${code ? ` (${code})` : ''}`, options);
    this.store = info.store;
    this.op = info.op;
    this.key = info.key;
    this.code = info.code;
    this.status = info.status;
  }

  override get name(): string {
    return this.constructor.name;
  }
}

/** The store asks for fewer requests (503 SlowDown, 429): wait and try again. */
export class ThrottledError extends StorageError {}

/** The store could not be reached or failed on its side (network error, timeout, 5xx). */
export class StoreUnavailableError extends StorageError {}

/** The credentials were accepted once but have expired (ExpiredToken): new ones may be read. */
export class CredentialsExpiredError extends StorageError {}

/** The store does not accept the credentials (unknown key, bad signature, none found). */
export class CredentialsRefusedError extends StorageError {}

/** The credentials are valid but may not do this (AccessDenied). */
export class AccessDeniedError extends StorageError {}

/** The bucket named in the URL does not exist. */
export class NoSuchBucketError extends StorageError {}

/** Anything else the store refused (a bad request, a key too long): trying again changes nothing. */
export class StoreRefusedError extends StorageError {}

export type RetryAction = 'backoff' | 'refresh-credentials' | 'fatal';

/** What to do about a failure: wait and retry, read the credentials again and retry, or give up. */
export function retryAction(e: unknown): RetryAction {
  if (e instanceof ThrottledError || e instanceof StoreUnavailableError) return 'backoff';
  if (e instanceof CredentialsExpiredError) return 'refresh-credentials';
  return 'fatal';
}
