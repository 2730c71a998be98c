import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

// A proxy in front of the simulator that rewrites what comes back: what a hostile or broken API
// could send (unknown fields, a record missing a required field, huge or deeply nested payloads,
// odd ids, cursors that loop), over otherwise real responses.

export interface Exchange {
  /** Path and query as the client sent them. */
  path: string;
  status: number;
  /** The parsed JSON body, or null when it was not JSON. */
  body: unknown;
  headers: Record<string, string>;
}

/** Returns what to send instead (status, body), or nothing to pass the response through. */
export type Rewrite = (x: Exchange) => { status?: number; body: unknown } | undefined;

export interface HostileProxy {
  url: string;
  paths: string[];
  close(): Promise<void>;
}

const HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'content-encoding']);

export interface ProxyOptions {
  /** Changes the request's path and query before it goes upstream. */
  request?: (path: string) => string;
  /** Answers a request itself, without asking upstream. */
  answer?: (path: string) => { status: number; body: unknown } | undefined;
}

export async function hostileProxy(
  target: string,
  rewrite: Rewrite,
  options: ProxyOptions = {},
): Promise<HostileProxy> {
  const paths: string[] = [];
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = req.url ?? '/';
    paths.push(path);
    void (async () => {
      const own = options.answer?.(path);
      if (own) {
        const t = JSON.stringify(own.body);
        res.writeHead(own.status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(t) });
        res.end(t);
        return;
      }
      const upstream = await fetch(`${target}${options.request ? options.request(path) : path}`, {
        headers: { authorization: req.headers.authorization ?? '' },
      });
      const text = await upstream.text();
      const headers: Record<string, string> = {};
      upstream.headers.forEach((v, k) => {
        if (!HOP.has(k)) headers[k] = v;
      });
      let body: unknown = null;
      try {
        body = JSON.parse(text);
      } catch {
        body = null;
      }
      const out = body === null ? undefined : rewrite({ path, status: upstream.status, body, headers });
      const sendText = out ? JSON.stringify(out.body) : text;
      res.writeHead(out?.status ?? upstream.status, { ...headers, 'content-length': Buffer.byteLength(sendText) });
      res.end(sendText);
    })().catch((e: unknown) => {
      res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(String(e));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    paths,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
