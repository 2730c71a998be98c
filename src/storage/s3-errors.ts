import {
  AccessDeniedError,
  CredentialsExpiredError,
  CredentialsRefusedError,
  NoSuchBucketError,
  type StorageError,
  type StorageErrorInfo,
  StoreRefusedError,
  StoreUnavailableError,
  ThrottledError,
} from './errors.ts';

// An S3 SDK error (or a network error under it) as one of the storage error classes. The SDK
// names a service error by the code in the response body; a response without a body (HEAD) has
// only its status.

const THROTTLED = new Set([
  'SlowDown',
  'Throttling',
  'ThrottlingException',
  'TooManyRequests',
  'TooManyRequestsException',
  'RequestLimitExceeded',
  'RequestThrottled',
  'ServiceUnavailable',
]);
const EXPIRED = new Set(['ExpiredToken', 'ExpiredTokenException', 'TokenRefreshRequired']);
const REFUSED = new Set([
  'InvalidAccessKeyId',
  'SignatureDoesNotMatch',
  'InvalidToken',
  'InvalidClientTokenId',
  'UnrecognizedClientException',
  'CredentialsProviderError',
]);
const DENIED = new Set(['AccessDenied', 'AllAccessDisabled', 'Forbidden']);
const NETWORK = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'TimeoutError',
  'RequestTimeout',
  'RequestTimeoutException',
]);

const CREDENTIALS_HINT =
  'RUNSYNC_S3_CREDENTIALS_FILE, or the AWS chain: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, a role';

interface SdkError {
  name?: string;
  code?: string;
  message?: string;
  $metadata?: { httpStatusCode?: number };
}

export function fromS3Error(e: unknown, at: Omit<StorageErrorInfo, 'code' | 'status'>): StorageError {
  const err = (e ?? {}) as SdkError;
  const status = err.$metadata?.httpStatusCode ?? null;
  const code = (err.code && NETWORK.has(err.code) ? err.code : err.name) ?? null;
  const info: StorageErrorInfo = { ...at, code, status };
  const options = { cause: e };
  if (code !== null && EXPIRED.has(code))
    return new CredentialsExpiredError(
      info,
      `the credentials have expired; give new ones (${CREDENTIALS_HINT})`,
      options,
    );
  if (code !== null && REFUSED.has(code))
    return new CredentialsRefusedError(
      info,
      code === 'CredentialsProviderError'
        ? `no credentials were found (${CREDENTIALS_HINT})`
        : `the store does not accept the credentials (${CREDENTIALS_HINT})`,
      options,
    );
  if ((code !== null && THROTTLED.has(code)) || status === 429 || status === 503)
    return new ThrottledError(info, 'the store asks for fewer requests', options);
  if (code === 'NoSuchBucket') return new NoSuchBucketError(info, 'the bucket does not exist', options);
  if ((code !== null && DENIED.has(code)) || status === 403)
    return new AccessDeniedError(
      info,
      'the credentials may not do this: runsync needs to list, read, write and delete objects under the prefix',
      options,
    );
  if ((code !== null && NETWORK.has(code)) || (status !== null && status >= 500) || status === null)
    return new StoreUnavailableError(
      info,
      `the store could not be reached or failed: ${oneLine(err.message)}`,
      options,
    );
  return new StoreRefusedError(info, 'the store refused the request', options);
}

function oneLine(text: string | undefined): string {
  return (text ?? 'no message').split('\n')[0]?.slice(0, 200) ?? '';
}
