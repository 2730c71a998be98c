import { createReadStream } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import {
  CopyObjectCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { type Logger, silentLogger } from '../util/logger.ts';
import { readCredentialsFile } from './credentials.ts';
import type { StorageOp } from './errors.ts';
import { DEFAULT_RETRY, type RetryPolicy, withRetry } from './retry.ts';
import { fromS3Error } from './s3-errors.ts';
import { type Body, checkKey, type ObjectStore, type StoredObject, s3Url } from './types.ts';

// A store under an S3 prefix (AWS, or anything speaking its API: MinIO, R2, GCS's XML API), through
// the official SDK. The SDK's own retries are off: every request goes through withRetry, so that
// throttling, outages and expired credentials are handled, and reported, one way. A file larger
// than a part goes up as a multipart upload, the parts in parallel; a PUT is atomic in S3, so a
// reader sees an object whole.

export interface S3StoreOptions {
  bucket: string;
  /** Without slashes at either end; '' for the bucket's root. */
  prefix: string;
  /** For S3-compatible stores, e.g. http://127.0.0.1:9000; null: AWS. */
  endpoint: string | null;
  region: string;
  /** Path-style addressing (endpoint/bucket/key), which most S3-compatible stores want. */
  pathStyle: boolean;
  /** An AWS-format credentials file read again after an ExpiredToken; null: the SDK's standard chain. */
  credentialsFile: string | null;
  profile: string;
  /** Bytes a multipart upload's part holds; files larger than this are sent in parts (default 16 MiB). */
  partSize?: number;
  retry?: RetryPolicy;
  logger?: Logger;
  /** How long one request may take (default 2 minutes). */
  requestTimeoutMs?: number;
}

export const DEFAULT_PART_SIZE = 16 * 2 ** 20;
const DELETE_BATCH = 1000;

export class S3Store implements ObjectStore {
  readonly url: string;
  private client: S3Client;
  private readonly root: string;
  private readonly logger: Logger;
  private multiDelete = true;

  constructor(private readonly o: S3StoreOptions) {
    this.root = o.prefix ? `${o.prefix}/` : '';
    this.url = s3Url(o.bucket, o.prefix);
    this.logger = o.logger ?? silentLogger();
    this.client = this.makeClient();
  }

  urlOf(key: string): string {
    return `${this.url}/${checkKey(key)}`;
  }

  async put(key: string, body: Body): Promise<void> {
    const Key = this.full(key);
    const partSize = this.o.partSize ?? DEFAULT_PART_SIZE;
    await this.attempt('put', key, async () => {
      if (body instanceof Uint8Array)
        return void (await this.client.send(new PutObjectCommand({ Bucket: this.o.bucket, Key, Body: body })));
      const size = (await stat(body.file)).size;
      if (size <= partSize) {
        const bytes = await readFile(body.file);
        return void (await this.client.send(new PutObjectCommand({ Bucket: this.o.bucket, Key, Body: bytes })));
      }
      const upload = new Upload({
        client: this.client,
        params: { Bucket: this.o.bucket, Key, Body: createReadStream(body.file) },
        partSize,
        queueSize: 4,
        leavePartsOnError: false,
      });
      await upload.done();
    });
  }

  async get(key: string): Promise<Buffer | null> {
    const Key = this.full(key);
    return this.attempt('get', key, async () => {
      try {
        const r = await this.client.send(new GetObjectCommand({ Bucket: this.o.bucket, Key }));
        return Buffer.from((await r.Body?.transformToByteArray()) ?? new Uint8Array());
      } catch (e) {
        const name = (e as { name?: string }).name;
        if (name === 'NoSuchKey' || name === 'NotFound') return null;
        throw e;
      }
    });
  }

  async list(prefix: string): Promise<StoredObject[]> {
    const out: StoredObject[] = [];
    let token: string | undefined;
    do {
      const page = await this.attempt('list', prefix || null, () =>
        this.client.send(
          new ListObjectsV2Command({ Bucket: this.o.bucket, Prefix: this.root + prefix, ContinuationToken: token }),
        ),
      );
      for (const c of page.Contents ?? []) {
        if (!c.Key?.startsWith(this.root)) continue;
        out.push({ key: c.Key.slice(this.root.length), size: c.Size ?? 0, modified: c.LastModified?.getTime() ?? 0 });
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return out.sort((a, b) => a.key.localeCompare(b.key));
  }

  async delete(keys: readonly string[]): Promise<void> {
    for (let i = 0; i < keys.length; i += DELETE_BATCH) {
      const batch = keys.slice(i, i + DELETE_BATCH);
      if (this.multiDelete && batch.length > 1 && (await this.deleteMany(batch))) continue;
      for (const key of batch)
        await this.attempt('delete', key, () =>
          this.client.send(new DeleteObjectCommand({ Bucket: this.o.bucket, Key: this.full(key) })),
        );
    }
  }

  async copy(from: string, to: string): Promise<void> {
    // URL-encoded, as S3 wants; '=' (of every hive folder) left as it is, as some stores decode
    // the source with decodeURI, which keeps %3D.
    const path = this.full(from)
      .split('/')
      .map((p) => encodeURIComponent(p).replaceAll('%3D', '='))
      .join('/');
    const source = `${this.o.bucket}/${path}`;
    await this.attempt('copy', to, () =>
      this.client.send(new CopyObjectCommand({ Bucket: this.o.bucket, Key: this.full(to), CopySource: source })),
    );
  }

  async close(): Promise<void> {
    this.client.destroy();
  }

  /** DeleteObjects; false when the store has no multi-object delete (GCS), which is then not asked again. */
  private async deleteMany(keys: readonly string[]): Promise<boolean> {
    try {
      const r = await this.attempt('delete', null, () =>
        this.client.send(
          new DeleteObjectsCommand({
            Bucket: this.o.bucket,
            Delete: { Objects: keys.map((k) => ({ Key: this.full(k) })), Quiet: true },
          }),
        ),
      );
      const failed = (r.Errors ?? []).filter((x) => x.Code !== 'NoSuchKey');
      if (failed.length > 0) {
        const first = failed[0];
        throw fromS3Error(
          { name: first?.Code, message: first?.Message, $metadata: { httpStatusCode: 200 } },
          { store: this.url, op: 'delete', key: first?.Key?.slice(this.root.length) ?? null },
        );
      }
      return true;
    } catch (e) {
      if ((e as { code?: string }).code !== 'NotImplemented') throw e;
      this.multiDelete = false;
      return false;
    }
  }

  private full(key: string): string {
    return this.root + checkKey(key);
  }

  private attempt<T>(op: StorageOp, key: string | null, fn: () => Promise<T>): Promise<T> {
    return withRetry(
      async () => {
        try {
          return await fn();
        } catch (e) {
          throw fromS3Error(e, { store: this.url, op, key });
        }
      },
      this.o.retry ?? DEFAULT_RETRY,
      {
        refresh: () => {
          // A new client resolves its credentials afresh: the file read again, or the standard
          // chain asked again (a rotated profile, a new role session).
          this.client.destroy();
          this.client = this.makeClient();
        },
        onRetry: (e, attempt, waitMs) =>
          this.logger.warn(
            { store: this.url, op, key, attempt, waitMs, error: (e as Error).message },
            'object store: trying again',
          ),
      },
    );
  }

  private makeClient(): S3Client {
    // runsync supports Node 20 with the SDK version its lock file pins; the SDK's notice about
    // its future releases would otherwise end up on every command's stderr.
    process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
    const o = this.o;
    const file = o.credentialsFile;
    return new S3Client({
      region: o.region,
      ...(o.endpoint ? { endpoint: o.endpoint } : {}),
      forcePathStyle: o.pathStyle,
      ...(file ? { credentials: async () => readCredentialsFile(file, o.profile) } : {}),
      maxAttempts: 1,
      // Checksums only where S3 requires them: S3-compatible stores often refuse the newer
      // trailing-checksum uploads the SDK would otherwise send.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      requestHandler: { requestTimeout: o.requestTimeoutMs ?? 120_000, connectionTimeout: 10_000 },
    });
  }
}
