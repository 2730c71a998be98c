import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApiClient, type ApiClientOptions } from '../../src/api/index.ts';
import { type RateBudgetOptions, SharedRateBudget } from '../../src/budget/index.ts';
import { type Simulator, type SimulatorOptions, startSimulator } from '../../src/simulator/index.ts';

// What the client tests share: a simulator at a fixed clock, and a client wired the way production
// wires it, with short backoff delays so retries do not slow the suite.

export const NOW = '2026-03-01T00:00:00Z';

export function startSim(options: SimulatorOptions = {}): Promise<Simulator> {
  return startSimulator({ port: 0, seed: 7, size: 400, now: NOW, ...options });
}

export interface TestClient {
  client: ApiClient;
  budget: SharedRateBudget;
}

export function makeClient(
  url: string,
  key: string,
  options: Partial<Omit<ApiClientOptions, 'budget'>> & {
    budget?: SharedRateBudget;
    budgetOptions?: RateBudgetOptions;
  } = {},
): TestClient {
  const { budgetOptions, budget: given, ...rest } = options;
  const budget = given ?? new SharedRateBudget(budgetOptions);
  const client = new ApiClient({
    baseUrl: url,
    apiKey: key,
    budget,
    validation: 'strict',
    retry: { baseDelayMs: 2, maxDelayMs: 20 },
    ...rest,
  });
  return { client, budget };
}

export async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

export async function failure(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected the call to fail');
}

/**
 * A tiny HTTP server for what the simulator cannot be made to do (loop its cursors, send a record
 * missing a required field, echo the key). Each request is answered by `handle`.
 */
export interface ScriptedServer {
  url: string;
  requests: { path: string; authorization: string | undefined }[];
  close(): Promise<void>;
}

export async function scriptedServer(
  handle: (req: IncomingMessage, res: ServerResponse, n: number) => void,
): Promise<ScriptedServer> {
  const requests: ScriptedServer['requests'] = [];
  const server: Server = createServer((req, res) => {
    requests.push({ path: req.url ?? '', authorization: req.headers.authorization });
    handle(req, res, requests.length);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}
