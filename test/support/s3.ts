import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, request, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import S3rver from 's3rver';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { S3Store, type S3StoreOptions } from '../../src/storage/s3.ts';

// A real S3-compatible server for the tests (s3rver, on this machine, its objects in a temp
// folder), reached through the official SDK; and a real HTTP proxy in front of it that can answer
// some requests with S3 errors (SlowDown, ExpiredToken, ...) or hold them without an answer.

export const BUCKET = 'runsync-test';
/** s3rver knows one access key id; it does not check SigV4 signatures, so any secret passes. */
export const ACCESS_KEY_ID = 'S3RVER';

export interface TestS3 {
  endpoint: string;
  /** A secret and a session token no output may ever show. */
  secret: string;
  token: string;
  /** A credentials file (RUNSYNC_S3_CREDENTIALS_FILE) holding them. */
  credentialsFile: string;
  writeCredentials(token: string, accessKeyId?: string): void;
  /** The environment a child process needs to reach the bucket through `endpoint` (or a proxy). */
  env(endpoint?: string): Record<string, string>;
  store(prefix: string, o?: Partial<S3StoreOptions>): S3Store;
  close(): Promise<void>;
}

export async function startS3(): Promise<TestS3> {
  const dir = mkdtempSync(join(tmpdir(), 'runsync-s3-'));
  const server = new S3rver({
    port: 0,
    address: '127.0.0.1',
    directory: join(dir, 'data'),
    silent: true,
    configureBuckets: [{ name: BUCKET, configs: [] }],
  });
  const { port } = (await server.run()) as AddressInfo;
  const endpoint = `http://127.0.0.1:${port}`;
  const secret = `secret-${randomBytes(12).toString('hex')}`;
  const token = `token-${randomBytes(12).toString('hex')}`;
  const credentialsFile = join(dir, 'credentials');
  const writeCredentials = (t: string, id = ACCESS_KEY_ID) => {
    mkdirSync(dirname(credentialsFile), { recursive: true });
    writeFileSync(
      credentialsFile,
      `[default]\naws_access_key_id = ${id}\naws_secret_access_key = ${secret}\naws_session_token = ${t}\n`,
    );
  };
  writeCredentials(token);
  const stores: S3Store[] = [];
  return {
    endpoint,
    secret,
    token,
    credentialsFile,
    writeCredentials,
    env: (at = endpoint) => ({
      RUNSYNC_S3_ENDPOINT: at,
      AWS_ACCESS_KEY_ID: ACCESS_KEY_ID,
      AWS_SECRET_ACCESS_KEY: secret,
      AWS_SESSION_TOKEN: token,
      AWS_REGION: 'us-east-1',
      AWS_EC2_METADATA_DISABLED: 'true',
    }),
    store(prefix, o = {}) {
      const s = new S3Store({
        bucket: BUCKET,
        prefix,
        endpoint,
        region: 'us-east-1',
        pathStyle: true,
        credentialsFile,
        profile: 'default',
        ...o,
      });
      stores.push(s);
      return s;
    },
    async close() {
      for (const s of stores) await s.close();
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface SeenRequest {
  method: string;
  /** Path and query as sent. */
  path: string;
  /** The session token the request carried. */
  token: string | null;
  /** What the proxy did: upstream's status, the fault it answered, or 0 while held. */
  status: number;
}

/** An S3 error to answer with, or `hold` to keep the request waiting for ever. */
export type Fault = { status: number; code: string } | 'hold';

export interface FaultProxy {
  url: string;
  seen: SeenRequest[];
  /** Decides each request's fate; undefined passes it to the store. */
  fault: (r: SeenRequest) => Fault | undefined;
  close(): Promise<void>;
}

export async function faultProxy(target: string): Promise<FaultProxy> {
  const upstream = new URL(target);
  const sockets = new Set<Socket>();
  const proxy: FaultProxy = { url: '', seen: [], fault: () => undefined, close: async () => {} };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const tokenHeader = req.headers['x-amz-security-token'];
    const seen: SeenRequest = {
      method: req.method ?? 'GET',
      path: req.url ?? '/',
      token: typeof tokenHeader === 'string' ? tokenHeader : null,
      status: 0,
    };
    proxy.seen.push(seen);
    const fault = proxy.fault(seen);
    if (fault === 'hold') return;
    if (fault) {
      seen.status = fault.status;
      req.resume();
      const body =
        `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${fault.code}</Code>` +
        '<Message>injected by the test proxy</Message><RequestId>t</RequestId></Error>';
      res.writeHead(fault.status, { 'content-type': 'application/xml', 'content-length': Buffer.byteLength(body) });
      res.end(body);
      return;
    }
    const out = request(
      { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers },
      (up) => {
        seen.status = up.statusCode ?? 0;
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      },
    );
    out.on('error', () => res.destroy());
    req.pipe(out);
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  proxy.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  proxy.close = () =>
    new Promise<void>((r) => {
      for (const s of sockets) s.destroy();
      server.close(() => r());
    });
  return proxy;
}

/** The server and a proxy in front of it for a test file: started before its tests, closed after;
 * every test starts with the proxy passing everything. */
export function useS3(): { s3: TestS3; proxy: FaultProxy } {
  const held = {} as { s3: TestS3; proxy: FaultProxy };
  beforeAll(async () => {
    held.s3 = await startS3();
    held.proxy = await faultProxy(held.s3.endpoint);
  });
  afterEach(() => {
    if (held.proxy) held.proxy.fault = () => undefined;
  });
  afterAll(async () => {
    await held.proxy?.close();
    await held.s3?.close();
  });
  return held;
}
