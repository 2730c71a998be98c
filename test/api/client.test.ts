import { type AddressInfo, createConnection, createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiPool, encodeSegment, NotFoundError, type Tool } from '../../src/api/index.ts';
import { createRecordValidator } from '../../src/api/validate.ts';
import { ConfigError } from '../../src/config/index.ts';
import type { Simulator } from '../../src/simulator/index.ts';
import { parseTimestamp } from '../../src/util/timestamp.ts';
import { collect, failure, makeClient, startSim, type TestClient } from './test-kit.ts';

// Every endpoint through the client against the simulator, faults off: typed records that pass the
// schemas strictly, lists walked to the end, ids of every shape reaching the right resource.

let sim: Simulator;
let t: TestClient;
const strict = createRecordValidator('strict');

beforeAll(async () => {
  sim = await startSim({ rateLimit: { perKey: null } });
  t = makeClient(sim.url, sim.key);
});
afterAll(async () => {
  await t.client.close();
  await sim.close();
});

describe('runs', () => {
  it('walks every run summary once, each valid against the schema', async () => {
    const runs = await collect(t.client.iterateRuns({}, { pageSize: 100 }));
    expect(runs.length).toBeGreaterThan(300);
    expect(new Set(runs.map((r) => r.id)).size).toBe(runs.length);
    for (const r of runs) expect(strict.check('run-summary', r)).toEqual([]);
    expect(t.client.stats().invalidRecords).toBe(0);
  });

  it('pages by cursor with the requested page size, and a single page reports where to go on', async () => {
    const first = await t.client.listRuns({}, { limit: 7 });
    expect(first.items).toHaveLength(7);
    expect(first.hasMore).toBe(true);
    expect(first.nextCursor).toEqual(expect.any(String));
    const second = await t.client.listRuns({}, { limit: 7, cursor: first.nextCursor });
    expect(second.items.map((r) => r.id)).not.toContain(first.items[0]?.id);
    const pages = await collect(t.client.runPages({}, { pageSize: 100 }));
    expect(pages.at(-1)?.hasMore).toBe(false);
    expect(pages.slice(0, -1).every((p) => p.items.length === 100)).toBe(true);
  });

  it('resumes a walk from a saved cursor without repeating or losing a run', async () => {
    const all = (await collect(t.client.iterateRuns({}, { pageSize: 50 }))).map((r) => r.id);
    const pages = t.client.runPages({}, { pageSize: 50 });
    const step = await pages.next();
    if (step.done) throw new Error('no first page');
    const first = step.value;
    await pages.return(undefined);
    const rest = await collect(
      t.client.iterateRuns({}, { pageSize: 50, resume: { part: 0, cursor: first.nextCursor } }),
    );
    expect([...first.items.map((r) => r.id), ...rest.map((r) => r.id)].sort()).toEqual([...all].sort());
  });

  it('fetches a run detail that agrees with its summary and keeps microsecond timestamps as text', async () => {
    const [summary] = (await t.client.listRuns({}, { limit: 1 })).items;
    const detail = await t.client.getRun(summary!.id);
    expect(strict.check('run-detail', detail)).toEqual([]);
    expect(detail.id).toBe(summary!.id);
    expect(detail.updated_at).toBe(summary!.updated_at);
    expect(parseTimestamp(detail.updated_at)).not.toBeNull();
    expect(Array.isArray(detail.steps) && Array.isArray(detail.conversation)).toBe(true);
  });

  it('answers NotFoundError for a run that does not exist, naming the endpoint and request_id', async () => {
    const e = await failure(t.client.getRun('00000000-0000-4000-8000-000000000000'));
    expect(e).toBeInstanceOf(NotFoundError);
    expect((e as NotFoundError).endpoint).toBe('runs.get');
    expect((e as NotFoundError).requestId).toMatch(/^req_/);
  });

  it('lists the run tool options', async () => {
    const options = await t.client.getRunToolOptions();
    expect(options.items.length).toBeGreaterThan(0);
    expect(options.refused).toEqual([]);
    for (const o of options.items) expect(strict.check('run-tool-option', o)).toEqual([]);
  });
});

describe('catalog', () => {
  let tools: Tool[];
  beforeAll(async () => {
    tools = await collect(t.client.iterateCatalog('tools', { pageSize: 9 }));
  });

  it('walks every tool across small pages, as many as the API holds', () => {
    expect(tools).toHaveLength(sim.world.catalogObjects('tool').length);
    expect(new Set(tools.map((x) => x.id)).size).toBe(tools.length);
    for (const x of tools) expect(strict.check('tool', x)).toEqual([]);
  });

  it('reaches every tool by its id, whatever characters the id holds', async () => {
    const odd = tools.filter((x) => /[/% ]|[^\x00-\x7f]/.test(x.id));
    expect(odd.map((x) => x.id)).toEqual(
      expect.arrayContaining([
        expect.stringContaining('/'),
        expect.stringContaining('%'),
        expect.stringContaining(' '),
      ]),
    );
    expect(odd.some((x) => /[^\x00-\x7f]/.test(x.id))).toBe(true);
    for (const x of tools) {
      const got = await t.client.getCatalogObject('tools', x.id);
      expect(got.id).toBe(x.id);
    }
  });

  it('encodes path segments fully, dot segments included', () => {
    expect(encodeSegment('service:date time')).toBe('service%3Adate%20time');
    expect(encodeSegment('service:knowledge/search.v2')).toBe('service%3Aknowledge%2Fsearch.v2');
    expect(encodeSegment('service:discount%calc')).toBe('service%3Adiscount%25calc');
    expect(encodeSegment('..')).toBe('%2E%2E');
  });

  it('lists and fetches agents, guidelines, guardrails and runbooks, each valid', async () => {
    const kinds = [
      ['agents', 'agent', (id: string) => t.client.getCatalogObject('agents', id)],
      ['guidelines', 'guideline', (id: string) => t.client.getCatalogObject('guidelines', id)],
      ['guardrails', 'guardrail', (id: string) => t.client.getCatalogObject('guardrails', id)],
      ['runbooks', 'runbook', (id: string) => t.client.getCatalogObject('runbooks', id)],
    ] as const;
    for (const [kind, schema, get] of kinds) {
      const items = await collect(t.client.iterateCatalog(kind, { pageSize: 5 }));
      expect(items.length, kind).toBe(sim.world.catalogObjects(schema).length);
      for (const item of items) expect(strict.check(schema, item), kind).toEqual([]);
      const one = await get(items[0]!.id);
      expect(one.id).toBe(items[0]!.id);
    }
    expect((await collect(t.client.iterateCatalog('agents'))).length).toBeGreaterThan(0);
    expect((await collect(t.client.iterateCatalog('guidelines'))).length).toBeGreaterThan(0);
    expect((await collect(t.client.iterateCatalog('runbooks'))).length).toBeGreaterThan(0);
  });

  it('filters tools and guardrails on the server', async () => {
    const mcp = await collect(
      t.client.iterateCatalog('tools', { filter: { type: ['mcp_tool'], isWriteAction: false } }),
    );
    expect(mcp.length).toBeGreaterThan(0);
    expect(mcp.every((x) => x.type === 'mcp_tool' && !x.is_write_action)).toBe(true);
    const serverId = mcp[0]!.mcp!.server_id;
    const one = await collect(t.client.iterateCatalog('tools', { filter: { mcpServerId: serverId } }));
    expect(one.every((x) => x.mcp?.server_id === serverId)).toBe(true);
    const restrictions = await collect(t.client.iterateCatalog('guardrails', { filter: { type: 'restriction' } }));
    expect(restrictions.length).toBeGreaterThan(0);
    expect(restrictions.every((g) => g.type === 'restriction')).toBe(true);
  });
});

describe('connections', () => {
  it('refuses a plain-http base URL that is not this machine, before sending anything', () => {
    expect(() => makeClient('http://support.example.com', sim.key)).toThrow(ConfigError);
    expect(() => makeClient('ftp://127.0.0.1', sim.key)).toThrow(/RUNSYNC_API_URL/);
  });

  it('reuses a bounded number of kept-alive connections however many requests run at once', async () => {
    // A TCP relay in front of the simulator counts the connections the client opens.
    let opened = 0;
    const sockets: Socket[] = [];
    const target = new URL(sim.url);
    const relay: Server = createServer((socket) => {
      opened++;
      sockets.push(socket);
      const upstream = createConnection(Number(target.port), target.hostname);
      socket.pipe(upstream).pipe(socket);
      socket.on('error', () => upstream.destroy());
      upstream.on('error', () => socket.destroy());
    });
    await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
    const own = makeClient(`http://127.0.0.1:${(relay.address() as AddressInfo).port}`, sim.key, {
      pool: { connections: 3 },
    });
    const ids = (await t.client.listRuns({}, { limit: 40 })).items.map((r) => r.id);
    const got = await collect(own.client.fetchRunDetails(ids, { concurrency: 8 }));
    expect(got.filter((r) => r.ok)).toHaveLength(40);
    await own.client.getCatalogObject('tools', 'service:web_search');
    expect(opened).toBeGreaterThanOrEqual(1);
    expect(opened).toBeLessThanOrEqual(3);
    await own.client.close();
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => relay.close(() => resolve()));
  });

  it('uses a pool passed in and leaves it open on close', async () => {
    const pool = createApiPool(new URL(sim.url).origin, { connections: 2 });
    const own = makeClient(sim.url, sim.key, { dispatcher: pool });
    const got = await collect(
      own.client.fetchRunDetails((await t.client.listRuns({}, { limit: 6 })).items.map((r) => r.id)),
    );
    expect(got.filter((r) => r.ok)).toHaveLength(6);
    await own.client.close();
    expect(pool.closed).toBe(false);
    await pool.close();
  });
});
