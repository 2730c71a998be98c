import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  CredentialsExpiredError,
  CredentialsRefusedError,
  NoSuchBucketError,
  retryAction,
  ThrottledError,
} from '../../src/storage/errors.ts';
import { LocalStore } from '../../src/storage/local.ts';
import { S3Store } from '../../src/storage/s3.ts';
import { BUCKET, useS3 } from '../support/s3.ts';
import { tempDir } from '../warehouse/wh-kit.ts';

// The object store against a real S3-compatible server through the official SDK: what it writes
// reads back the same, large files go up in parts, throttling is waited out, and credentials the
// store refuses or that expired are told apart, retried only when new ones can be read.

const held = useS3();
const FAST = { attempts: 5, baseMs: 5, maxMs: 20 };

function viaProxy(prefix: string, o: Partial<ConstructorParameters<typeof S3Store>[0]> = {}): S3Store {
  return held.s3.store(prefix, { endpoint: held.proxy.url, retry: FAST, ...o });
}

describe('S3 store', () => {
  it('writes, lists, copies and deletes under its prefix, and sends a large file in parts', async () => {
    const store = viaProxy('basics/p');
    const other = held.s3.store('basics/other');
    await other.put('keep.txt', Buffer.from('not mine'));
    await store.put('runs/created_date=2026-01-01/data.parquet', Buffer.from('one'));
    await store.copy('runs/created_date=2026-01-01/data.parquet', '_data/1/runs/created_date=2026-01-01/data.parquet');
    expect((await store.list('')).map((o) => o.key)).toEqual([
      '_data/1/runs/created_date=2026-01-01/data.parquet',
      'runs/created_date=2026-01-01/data.parquet',
    ]);
    expect((await store.get('_data/1/runs/created_date=2026-01-01/data.parquet'))?.toString()).toBe('one');
    expect(await store.get('missing')).toBeNull();

    const t = tempDir();
    try {
      const big = join(t.dir, 'big');
      const bytes = randomBytes(11 * 2 ** 20);
      writeFileSync(big, bytes);
      const before = held.proxy.seen.length;
      const parts = viaProxy('basics/p', { partSize: 5 * 2 ** 20 });
      await parts.put('big.bin', { file: big });
      const sent = held.proxy.seen.slice(before);
      expect(sent.filter((r) => r.method === 'PUT' && /partNumber=/.test(r.path))).toHaveLength(3);
      expect((await store.get('big.bin'))?.equals(bytes)).toBe(true);
    } finally {
      t.cleanup();
    }
    await store.delete(['big.bin', 'runs/created_date=2026-01-01/data.parquet', 'never-there']);
    expect((await store.list('')).map((o) => o.key)).toEqual(['_data/1/runs/created_date=2026-01-01/data.parquet']);
    expect((await other.list('')).map((o) => o.key)).toEqual(['keep.txt']);
    expect(store.url).toBe(`s3://${BUCKET}/basics/p`);
  });

  it('waits out throttling (503 SlowDown) and says so clearly when it does not end', async () => {
    const store = viaProxy('throttle');
    let refused = 0;
    held.proxy.fault = (r) => (r.method === 'PUT' && refused++ < 3 ? { status: 503, code: 'SlowDown' } : undefined);
    await store.put('a.txt', Buffer.from('after three refusals'));
    expect(refused).toBe(4);
    expect((await store.get('a.txt'))?.toString()).toBe('after three refusals');

    held.proxy.fault = () => ({ status: 503, code: 'SlowDown' });
    const e = await store.get('a.txt').catch((x: unknown) => x);
    held.proxy.fault = () => undefined;
    expect(e).toBeInstanceOf(ThrottledError);
    expect(retryAction(e)).toBe('backoff');
    expect((e as Error).message).toBe(
      `get s3://${BUCKET}/throttle/a.txt: the store asks for fewer requests (SlowDown, HTTP 503)`,
    );
  });

  it('gives up at once on credentials the store refuses, and on a bucket that does not exist', async () => {
    const t = tempDir();
    try {
      const file = join(t.dir, 'credentials');
      writeFileSync(file, '[default]\naws_access_key_id = NOBODY\naws_secret_access_key = whatever-secret-1\n');
      const store = viaProxy('refused', { credentialsFile: file });
      const before = held.proxy.seen.length;
      const e = await store.put('x', Buffer.from('x')).catch((x: unknown) => x);
      expect(e).toBeInstanceOf(CredentialsRefusedError);
      expect(retryAction(e)).toBe('fatal');
      expect((e as Error).message).toMatch(
        /does not accept the credentials \(RUNSYNC_S3_CREDENTIALS_FILE.*InvalidAccessKeyId/,
      );
      expect((e as Error).message).not.toContain('NOBODY');
      expect(held.proxy.seen.length - before).toBe(1);
    } finally {
      t.cleanup();
    }
    const nowhere = new S3Store({ ...storeOptions(), bucket: 'no-such-bucket' });
    const e = await nowhere.get('x').catch((x: unknown) => x);
    await nowhere.close();
    expect(e).toBeInstanceOf(NoSuchBucketError);
  });

  it('reads a credentials file again after ExpiredToken, and reports expiry clearly when it stays', async () => {
    const old = `old-${randomBytes(6).toString('hex')}`;
    const fresh = `fresh-${randomBytes(6).toString('hex')}`;
    const expired = new Set<string>();
    held.proxy.fault = (r) =>
      r.token !== null && expired.has(r.token) ? { status: 400, code: 'ExpiredToken' } : undefined;
    try {
      held.s3.writeCredentials(old);
      const store = viaProxy('expiry');
      await store.put('first', Buffer.from('1'));
      // The session ends, and an agent has written the next one into the file.
      expired.add(old);
      held.s3.writeCredentials(fresh);
      await store.put('second', Buffer.from('2'));
      expect(held.proxy.seen.filter((r) => r.token === old).map((r) => r.status)).toEqual([200, 400]);
      expect((await store.list('')).map((o) => o.key)).toEqual(['first', 'second']);

      // Nobody renewed it: read again, refused again, reported.
      expired.add(fresh);
      const e = await store.get('first').catch((x: unknown) => x);
      expect(e).toBeInstanceOf(CredentialsExpiredError);
      expect(retryAction(e)).toBe('refresh-credentials');
      expect((e as Error).message).toMatch(/the credentials have expired; give new ones .*\(ExpiredToken, HTTP 400\)$/);
      expect((e as Error).message).not.toContain(fresh);
      expect(held.proxy.seen.filter((r) => r.token === fresh).map((r) => r.status)).toEqual([200, 200, 400, 400]);
    } finally {
      held.s3.writeCredentials(held.s3.token);
      held.proxy.fault = () => undefined;
    }
  });

  it('a local folder store writes whole files, lists and deletes them, and removes emptied folders', async () => {
    const t = tempDir();
    try {
      const store = new LocalStore(join(t.dir, 'root'));
      await store.put('a/b/c.txt', Buffer.from('c'));
      await store.copy('a/b/c.txt', 'd.txt');
      expect((await store.list('')).map((o) => [o.key, o.size])).toEqual([
        ['a/b/c.txt', 1],
        ['d.txt', 1],
      ]);
      await store.delete(['a/b/c.txt']);
      expect(await store.list('a')).toEqual([]);
      expect(await store.get('a/b/c.txt')).toBeNull();
      expect(() => store.urlOf('../escape')).toThrow(/not a storage key/);
    } finally {
      t.cleanup();
    }
  });
});

function storeOptions() {
  return {
    bucket: BUCKET,
    prefix: '',
    endpoint: held.s3.endpoint,
    region: 'us-east-1',
    pathStyle: true,
    credentialsFile: held.s3.credentialsFile,
    profile: 'default',
    retry: FAST,
  };
}
