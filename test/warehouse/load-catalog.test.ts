import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { CATALOG_TABLES, type CatalogTable } from '../../src/resources/registry.ts';
import { type Simulator, startSimulator } from '../../src/simulator/index.ts';
import { type Micros, parseTimestamp } from '../../src/util/timestamp.ts';
import { loadCatalogListing } from '../../src/warehouse/load-catalog.ts';
import { loadToolOptions } from '../../src/warehouse/load-tool-options.ts';
import { openWarehouse } from '../../src/warehouse/open.ts';
import type { Warehouse } from '../../src/warehouse/types.ts';
import { CATALOG_KIND, count, tempDir } from './wh-kit.ts';

const T = (s: string) => parseTimestamp(s) as Micros;

let tmp: ReturnType<typeof tempDir>;
let wh: Warehouse;
let now = T('2026-03-01T00:00:00Z');
beforeEach(async () => {
  tmp = tempDir();
  now = T('2026-03-01T00:00:00Z');
  wh = await openWarehouse(join(tmp.dir, 'w'), { now: () => now });
});
afterEach(async () => {
  await wh.close();
  tmp.cleanup();
});

function guideline(id: string, over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id,
    object: 'guideline',
    title: `Title ${id}`,
    content: 'Be kind.',
    section: { id: 'sec', name: 'Tone', description: '', icon: '📦' },
    created_at: '2026-01-01T00:00:00Z',
    updated_at: '2026-02-01T00:00:00Z',
    ...over,
  };
}

interface Version {
  id: string;
  title: string;
  vf: bigint;
  vt: bigint | null;
  del: boolean;
}

async function versions(table = 'guidelines'): Promise<Version[]> {
  return wh.all<Version>(
    `SELECT id, title, epoch_us(valid_from) AS vf, epoch_us(valid_to) AS vt, is_deleted AS del
     FROM ${table}_history ORDER BY id, valid_from`,
  );
}

describe('catalog history', () => {
  it('records a first listing as one current version per object, valid from its updated_at', async () => {
    const r = await loadCatalogListing(wh, 'guidelines', [guideline('a'), guideline('b')], { complete: true });
    expect(r).toMatchObject({ added: 2, changed: 0, deleted: 0 });
    expect(await versions()).toEqual([
      { id: 'a', title: 'Title a', vf: BigInt(T('2026-02-01T00:00:00Z')), vt: null, del: false },
      { id: 'b', title: 'Title b', vf: BigInt(T('2026-02-01T00:00:00Z')), vt: null, del: false },
    ]);
    expect(await count(wh, `SELECT count(*) FROM guidelines`)).toBe(2);
  });

  it('an edit makes a new version and closes the old one at the new one’s valid_from', async () => {
    await loadCatalogListing(wh, 'guidelines', [guideline('a')], { complete: true });
    now += 10;
    const r = await loadCatalogListing(
      wh,
      'guidelines',
      [guideline('a', { title: 'New', updated_at: '2026-02-05T00:00:00.000007Z' })],
      { complete: true },
    );
    expect(r).toMatchObject({ changed: 1, added: 0 });
    const edit = BigInt(T('2026-02-05T00:00:00.000007Z'));
    expect(await versions()).toEqual([
      { id: 'a', title: 'Title a', vf: BigInt(T('2026-02-01T00:00:00Z')), vt: edit, del: false },
      { id: 'a', title: 'New', vf: edit, vt: null, del: false },
    ]);
    expect(await wh.all(`SELECT title FROM guidelines`)).toEqual([{ title: 'New' }]);
  });

  it('a listing with nothing new changes nothing and archives nothing', async () => {
    await loadCatalogListing(wh, 'guidelines', [guideline('a')], { complete: true });
    now += 10;
    const r = await loadCatalogListing(wh, 'guidelines', [guideline('a')], { complete: true });
    expect(r).toMatchObject({ unchanged: 1, changed: 0, archiveFile: null });
    expect(await count(wh, `SELECT count(*) FROM guidelines_history`)).toBe(1);
  });

  it('an object missing from a complete listing is marked deleted; it comes back as a new version', async () => {
    await loadCatalogListing(wh, 'guidelines', [guideline('a'), guideline('b')], { complete: true });
    now = T('2026-03-02T00:00:00Z');
    const gone = await loadCatalogListing(wh, 'guidelines', [guideline('a')], { complete: true });
    expect(gone).toMatchObject({ deleted: 1, inferredDeletions: true });
    expect(await wh.all(`SELECT id FROM guidelines`)).toEqual([{ id: 'a' }]);
    now = T('2026-03-03T00:00:00Z');
    const back = await loadCatalogListing(
      wh,
      'guidelines',
      [guideline('a'), guideline('b', { updated_at: '2026-03-02T12:00:00Z' })],
      { complete: true },
    );
    expect(back).toMatchObject({ reappeared: 1 });
    const b = (await versions()).filter((v) => v.id === 'b');
    expect(b).toEqual([
      {
        id: 'b',
        title: 'Title b',
        vf: BigInt(T('2026-02-01T00:00:00Z')),
        vt: BigInt(T('2026-03-02T00:00:00Z')),
        del: false,
      },
      {
        id: 'b',
        title: 'Title b',
        vf: BigInt(T('2026-03-02T00:00:00Z')),
        vt: BigInt(T('2026-03-02T12:00:00Z')),
        del: true,
      },
      { id: 'b', title: 'Title b', vf: BigInt(T('2026-03-02T12:00:00Z')), vt: null, del: false },
    ]);
    expect(await count(wh, `SELECT count(*) FROM guidelines`)).toBe(2);
  });

  it('a reappearance with its old updated_at starts at the listing, so versions never overlap', async () => {
    await loadCatalogListing(wh, 'guidelines', [guideline('b')], { complete: true });
    now = T('2026-03-02T00:00:00Z');
    await loadCatalogListing(wh, 'guidelines', [], { complete: true });
    now = T('2026-03-03T00:00:00Z');
    await loadCatalogListing(wh, 'guidelines', [guideline('b')], { complete: true });
    const vs = await versions();
    expect(vs.map((v) => [v.vf, v.vt, v.del])).toEqual([
      [BigInt(T('2026-02-01T00:00:00Z')), BigInt(T('2026-03-02T00:00:00Z')), false],
      [BigInt(T('2026-03-02T00:00:00Z')), BigInt(T('2026-03-03T00:00:00Z')), true],
      [BigInt(T('2026-03-03T00:00:00Z')), null, false],
    ]);
  });

  it('never infers a deletion from a partial listing, nor from one taken before the last complete one', async () => {
    await loadCatalogListing(wh, 'guidelines', [guideline('a'), guideline('b')], {
      complete: true,
      listedAt: T('2026-03-01T00:00:00Z'),
    });
    const partial = await loadCatalogListing(wh, 'guidelines', [guideline('a')], { complete: false });
    expect(partial).toMatchObject({ deleted: 0, inferredDeletions: false });
    const late = await loadCatalogListing(wh, 'guidelines', [guideline('a')], {
      complete: true,
      listedAt: T('2026-02-28T00:00:00Z'),
    });
    expect(late).toMatchObject({ deleted: 0, inferredDeletions: false });
    expect(await count(wh, `SELECT count(*) FROM guidelines_history WHERE is_deleted`)).toBe(0);
    expect(await count(wh, `SELECT count(*) FROM guidelines`)).toBe(2);
  });

  it('does not infer deletions when a refused payload has no readable id, and keeps refused payloads', async () => {
    await loadCatalogListing(wh, 'guidelines', [guideline('a'), guideline('b')], { complete: true });
    now += 10;
    const r = await loadCatalogListing(wh, 'guidelines', [guideline('a'), { title: 'no id' }], { complete: true });
    expect(r).toMatchObject({ deleted: 0, inferredDeletions: false });
    expect(r.rejected).toEqual([{ id: null, reason: 'id: required, but absent or null' }]);
    now += 10;
    const r2 = await loadCatalogListing(wh, 'guidelines', [guideline('a'), guideline('b', { updated_at: 42 })], {
      complete: true,
    });
    expect(r2).toMatchObject({ deleted: 0, inferredDeletions: true });
    expect(await count(wh, `SELECT count(*) FROM _sync_rejected WHERE endpoint = 'guidelines'`)).toBe(2);
  });

  it('ignores a payload older than the stored version (a slower fetch of the same listing)', async () => {
    await loadCatalogListing(wh, 'guidelines', [guideline('a', { title: 'New', updated_at: '2026-02-05T00:00:00Z' })], {
      complete: false,
    });
    const r = await loadCatalogListing(
      wh,
      'guidelines',
      [guideline('a', { title: 'Old', updated_at: '2026-02-01T00:00:00Z' })],
      { complete: false },
    );
    expect(r).toMatchObject({ stale: 1, changed: 0 });
    expect(await wh.all(`SELECT title FROM guidelines`)).toEqual([{ title: 'New' }]);
  });

  it('of duplicates in one listing keeps the newest', async () => {
    const r = await loadCatalogListing(
      wh,
      'guidelines',
      [guideline('a', { title: 'v2', updated_at: '2026-02-02T00:00:00Z' }), guideline('a')],
      { complete: true },
    );
    expect(r).toMatchObject({ added: 1, duplicates: 1 });
    expect(await wh.all(`SELECT title FROM guidelines_history`)).toEqual([{ title: 'v2' }]);
  });

  it('updates agents’ last_run_at in place without a new version; an edit still makes one', async () => {
    const agent = (over: Record<string, unknown>) => ({
      id: 'ag',
      object: 'agent',
      name: 'Aria',
      description: '',
      status: 'active',
      instructions: '',
      last_run_at: '2026-02-01T00:00:00Z',
      start_with: { type: 'greeting', id: 'x', name: 'x' },
      model_config: { temperature: 0.2 },
      tool_ids: [],
      resolution_tracking: true,
      resolution_rule_ids: [],
      knowledge_tags: [],
      guideline_ids: [],
      guardrail_ids: [],
      attribute_ids: [],
      category_ids: [],
      included_runbook_ids: [],
      excluded_runbook_ids: [],
      included_workflow_ids: [],
      excluded_workflow_ids: [],
      created_at: '2026-01-01T00:00:00Z',
      updated_at: '2026-01-15T00:00:00Z',
      ...over,
    });
    await loadCatalogListing(wh, 'agents', [agent({})], { complete: true });
    now += 10;
    const touched = await loadCatalogListing(
      wh,
      'agents',
      [agent({ last_run_at: '2026-02-20T00:00:00.000001Z', model_config: { temperature: 0.2 } })],
      { complete: true },
    );
    expect(touched).toMatchObject({ touched: 1, changed: 0 });
    expect(await wh.all(`SELECT epoch_us(last_run_at) AS l FROM agents`)).toEqual([
      { l: BigInt(T('2026-02-20T00:00:00.000001Z')) },
    ]);
    expect(await wh.all(`SELECT epoch_us(last_run_at) AS l, valid_to FROM agents_history`)).toEqual([
      { l: BigInt(T('2026-02-20T00:00:00.000001Z')), valid_to: null },
    ]);
    now += 10;
    const older = await loadCatalogListing(wh, 'agents', [agent({ last_run_at: '2026-02-10T00:00:00Z' })], {
      complete: true,
    });
    expect(older).toMatchObject({ touched: 0, unchanged: 1 });
    now += 10;
    const edited = await loadCatalogListing(
      wh,
      'agents',
      [agent({ last_run_at: '2026-02-21T00:00:00Z', tool_ids: ['t1'], updated_at: '2026-02-21T00:00:00Z' })],
      { complete: true },
    );
    expect(edited).toMatchObject({ changed: 1 });
    expect(await count(wh, `SELECT count(*) FROM agents_history`)).toBe(2);
  });

  it('versions tool parameters with their tool', async () => {
    const tool = (params: { name: string; type: string }[], updated: string) => ({
      id: 'service:x',
      object: 'tool',
      type: 'service_tool',
      name: 'x',
      description: '',
      is_write_action: false,
      requires_approval: false,
      enabled: true,
      parameters: params.map((p) => ({ ...p, required: true, description: '', has_preset_value: false })),
      service: { category: 'c', availability: 'a' },
      created_at: '2026-01-01T00:00:00Z',
      updated_at: updated,
    });
    await loadCatalogListing(
      wh,
      'tools',
      [
        tool(
          [
            { name: 'id', type: 'string' },
            { name: 'q', type: 'string' },
          ],
          '2026-02-01T00:00:00Z',
        ),
      ],
      { complete: true },
    );
    now += 10;
    await loadCatalogListing(wh, 'tools', [tool([{ name: 'id', type: 'integer' }], '2026-02-02T00:00:00Z')], {
      complete: true,
    });
    expect(await wh.all(`SELECT name, type FROM tool_parameters`)).toEqual([{ name: 'id', type: 'integer' }]);
    expect(
      await wh.all(
        `SELECT name, type, valid_to IS NULL AS current FROM tool_parameters_history ORDER BY valid_from, name`,
      ),
    ).toEqual([
      { name: 'id', type: 'string', current: false },
      { name: 'q', type: 'string', current: false },
      { name: 'id', type: 'integer', current: true },
    ]);
    now += 10;
    await loadCatalogListing(wh, 'tools', [], { complete: true });
    expect(await count(wh, `SELECT count(*) FROM tool_parameters`)).toBe(0);
    expect(await wh.all(`SELECT name, is_deleted FROM tool_parameters_history WHERE valid_to IS NULL`)).toEqual([
      { name: 'id', is_deleted: true },
    ]);
  });
});

describe('catalog against the simulator over time', () => {
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startSimulator({ seed: 9, size: 50, now: '2026-03-01T00:00:00Z', rateLimit: { perKey: null } });
  });
  afterAll(() => sim.close());

  it('tracks edits, unpublished and deleted objects, and keeps one current version per live object', async () => {
    const w = await openWarehouse(join(tmp.dir, 'sim'), { now: () => sim.clock.now() });
    let deleted = 0;
    let changed = 0;
    for (let step = 0; step < 6; step++) {
      for (const t of CATALOG_TABLES) {
        const r = await loadCatalogListing(w, t, sim.world.catalogObjects(CATALOG_KIND[t]), { complete: true });
        deleted += r.deleted;
        changed += r.changed;
      }
      for (const t of CATALOG_TABLES) await expectMatchesWorld(w, t);
      sim.advance('7d');
    }
    expect(deleted).toBeGreaterThan(0);
    expect(changed).toBeGreaterThan(0);
    for (const t of CATALOG_TABLES) {
      expect(
        await count(
          w,
          `SELECT count(*) FROM (SELECT id FROM ${t}_history WHERE valid_to IS NULL GROUP BY id HAVING count(*) > 1)`,
        ),
      ).toBe(0);
      expect(
        await count(
          w,
          `SELECT count(*) FROM ${t}_history a JOIN ${t}_history b ON a.id = b.id AND a.valid_from < b.valid_from
        AND (a.valid_to IS NULL OR a.valid_to > b.valid_from)`,
        ),
      ).toBe(0);
    }
    await w.close();
  });

  async function expectMatchesWorld(w: Warehouse, table: CatalogTable): Promise<void> {
    const live = (await w.all<{ id: string }>(`SELECT id FROM ${table} ORDER BY id`)).map((r) => r.id);
    const world = sim.world
      .catalogObjects(CATALOG_KIND[table])
      .map((o) => o.id as string)
      .sort();
    expect(live, table).toEqual(world);
    const current = (
      await w.all<{ id: string }>(
        `SELECT id FROM ${table}_history WHERE valid_to IS NULL AND NOT is_deleted ORDER BY id`,
      )
    ).map((r) => r.id);
    expect(current, `${table}_history`).toEqual(world);
  }
});

describe('tool options', () => {
  it('replaces the list when it changes, ignores a stale fetch, and keeps rows when an item is refused', async () => {
    const o = (name: string, n: number) => ({ tool_name: name, display_name: name.toUpperCase(), run_count: n });
    expect((await loadToolOptions(wh, [o('a', 1), o('b', 2)], { fetchedAt: 10 })).changed).toBe(true);
    expect((await loadToolOptions(wh, [o('a', 1), o('b', 2)], { fetchedAt: 20 })).changed).toBe(false);
    expect((await loadToolOptions(wh, [o('a', 5)], { fetchedAt: 30 })).changed).toBe(true);
    expect(await wh.all(`SELECT tool_name, run_count FROM run_tool_options`)).toEqual([
      { tool_name: 'a', run_count: 5n },
    ]);
    expect((await loadToolOptions(wh, [o('z', 1)], { fetchedAt: 25 })).stale).toBe(true);
    const r = await loadToolOptions(wh, [o('c', 1), { tool_name: 'bad', run_count: 'many' }], { fetchedAt: 40 });
    expect(r.rejected).toHaveLength(1);
    expect(await wh.all(`SELECT tool_name FROM run_tool_options ORDER BY 1`)).toEqual([
      { tool_name: 'a' },
      { tool_name: 'c' },
    ]);
  });
});
