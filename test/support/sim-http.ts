import type { Simulator } from '../../src/simulator/index.ts';

// Plain HTTP against the simulator, for the simulator's own contract tests (the product's client
// lives in src/api/ and is tested separately).

export interface Reply {
  status: number;
  headers: Headers;
  body: any;
}

export type Query = Record<string, string | number | boolean | readonly (string | number)[] | undefined>;

export function buildUrl(base: string, path: string, query: Query = {}): string {
  const u = new URL(`${base}${path}`);
  for (const [k, v] of Object.entries(query)) {
    if (v === undefined) continue;
    if (Array.isArray(v)) for (const item of v) u.searchParams.append(k, String(item));
    else u.searchParams.append(k, String(v));
  }
  return u.toString();
}

export async function get(
  sim: Simulator,
  path: string,
  query: Query = {},
  key: string | null = sim.key,
): Promise<Reply> {
  const headers: Record<string, string> = {};
  if (key !== null) headers.authorization = `Bearer ${key}`;
  const res = await fetch(buildUrl(sim.url, path, query), { headers });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // non-JSON bodies (proxy errors, malformed faults) stay text
  }
  return { status: res.status, headers: res.headers, body };
}

/** Follows next_cursor to the end, checking the paging rule on every page. */
export async function pageAll(sim: Simulator, path: string, query: Query = {}, key: string = sim.key): Promise<any[]> {
  const items: any[] = [];
  let cursor = query.cursor as string | undefined;
  for (let pages = 0; ; pages++) {
    if (pages > 100_000) throw new Error('too many pages');
    const r = await get(sim, path, { ...query, cursor }, key);
    if (r.status !== 200) throw new Error(`${path} answered ${r.status}: ${JSON.stringify(r.body)}`);
    const { data, pagination } = r.body;
    items.push(...data);
    if (pagination.has_more !== (pagination.next_cursor !== null))
      throw new Error('has_more disagrees with next_cursor');
    if (!pagination.has_more) return items;
    cursor = pagination.next_cursor;
  }
}
