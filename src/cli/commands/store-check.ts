import { ConfigError } from '../../config/error.ts';
import {
  AccessDeniedError,
  CredentialsExpiredError,
  CredentialsRefusedError,
  NoSuchBucketError,
} from '../../storage/errors.ts';
import { openStore } from '../../storage/open.ts';
import type { S3Settings, StorageLocation } from '../../storage/types.ts';
import { silentLogger } from '../../util/logger.ts';

// A long-running process checks at start that the buckets it was given answer, so that a wrong
// bucket or credentials stop it with one line naming the setting (exit 2) rather than failing
// every job afterwards. One read of a key that is not there: allowed by the narrowest policy.

const PROBE_KEY = '_runsync-start-check';

export async function checkBucket(location: StorageLocation, s3: S3Settings, setting: string): Promise<void> {
  if (location.kind !== 's3') return;
  const store = openStore(location, s3, { logger: silentLogger() });
  try {
    await store.get(PROBE_KEY);
  } catch (e) {
    const known = [NoSuchBucketError, CredentialsRefusedError, CredentialsExpiredError, AccessDeniedError];
    if (known.some((k) => e instanceof k)) throw new ConfigError(setting, (e as Error).message);
    throw e;
  } finally {
    await store.close();
  }
}
