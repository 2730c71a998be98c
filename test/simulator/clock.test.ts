import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isOpenSummary, type Simulator, startSimulator } from '../../src/simulator/index.ts';
import { MICROS_PER_DAY, parseTimestamp } from '../../src/util/timestamp.ts';
import { get, pageAll } from '../support/sim-http.ts';

// Time and change: data is a pure function of seed, size and clock; as the clock moves new runs
// arrive (some late, created in the past), runs in progress settle (also weeks later), settled
// runs occasionally change again, and catalog objects are edited, unpublished or deleted.

const NOW = '2026-03-01T00:00:00Z';
const micros = (t: string) => parseTimestamp(t) as number;

function asText(x: unknown): string {
  return JSON.stringify(x);
}

describe('determinism', () => {
  it('the same seed and size give the same answers; another seed gives others', async () => {
    const a = await startSimulator({ seed: 8, size: 300, now: NOW });
    const b = await startSimulator({ seed: 8, size: 300, now: NOW });
    const c = await startSimulator({ seed: 9, size: 300, now: NOW });
    try {
      for (const path of [
        '/api/v1/runs',
        '/api/v1/tools',
        '/api/v1/agents',
        '/api/v1/runbooks',
        '/api/v1/runs/tool-options',
      ]) {
        expect(asText((await get(a, path)).body.data)).toBe(asText((await get(b, path)).body.data));
      }
      const id = (await get(a, '/api/v1/runs', { limit: 1 })).body.data[0].id;
      expect((await get(a, `/api/v1/runs/${id}`)).body).toEqual((await get(b, `/api/v1/runs/${id}`)).body);
      expect((await get(c, `/api/v1/runs/${id}`)).status).toBe(404);
      a.advance('3d');
      b.advance('3d');
      expect(asText(await pageAll(a, '/api/v1/runs', { limit: 100 }))).toBe(
        asText(await pageAll(b, '/api/v1/runs', { limit: 100 })),
      );
    } finally {
      await Promise.all([a.close(), b.close(), c.close()]);
    }
  });
});

describe('a moving clock', () => {
  let sim: Simulator;
  let before: Map<string, any>;
  let catalogBefore: Record<string, any[]>;
  const catalogPaths = ['tools', 'agents', 'guidelines', 'guardrails', 'runbooks'];

  beforeAll(async () => {
    sim = await startSimulator({
      seed: 31,
      size: 3000,
      now: NOW,
      rateLimit: { perKey: null },
      runs: { lateFraction: 0.2, postSettleFraction: 0.3 },
    });
    before = new Map((await pageAll(sim, '/api/v1/runs', { limit: 100 })).map((r) => [r.id, r]));
    catalogBefore = {};
    for (const p of catalogPaths) catalogBefore[p] = await pageAll(sim, `/api/v1/${p}`, { limit: 200 });
    sim.advance('40d');
  });
  afterAll(() => sim.close());

  it('refuses to move backwards', () => {
    expect(() => sim.clock.set(micros(NOW))).toThrow(/forward/);
  });

  it('new runs arrive as the clock passes their creation', async () => {
    const after = await pageAll(sim, '/api/v1/runs', { limit: 100 });
    const fresh = after.filter((r) => !before.has(r.id));
    expect(fresh.length).toBeGreaterThan(3000 * (40 / 30) * 0.8);
    for (const r of fresh) expect(micros(r.created_at)).toBeLessThanOrEqual(sim.clock.now());
  });

  it('runs in progress settle, some of them weeks after they were created', async () => {
    const open = [...before.values()].filter(isOpenSummary);
    expect(open.length).toBeGreaterThan(50);
    let settled = 0;
    let weeksLater = 0;
    for (const r of open) {
      const now = (await get(sim, `/api/v1/runs/${r.id}`)).body.data;
      if (isOpenSummary(now)) continue;
      settled++;
      expect(micros(now.updated_at)).toBeGreaterThan(micros(r.updated_at));
      if (micros(now.updated_at) - micros(now.created_at) > 7 * MICROS_PER_DAY) weeksLater++;
    }
    expect(settled / open.length).toBeGreaterThan(0.7);
    expect(weeksLater).toBeGreaterThan(0);
  });

  it('some settled runs change again later, and the list shows the new updated_at', async () => {
    const after = new Map((await pageAll(sim, '/api/v1/runs', { limit: 100 })).map((r) => [r.id, r]));
    const changed = [...before.values()].filter(
      (r) => !isOpenSummary(r) && after.get(r.id).updated_at !== r.updated_at,
    );
    expect(changed.length).toBeGreaterThan(10);
    for (const r of changed) expect(micros(after.get(r.id).updated_at)).toBeGreaterThan(micros(r.updated_at));
  });

  it('steps appear as runs progress, and a superseded step disappears', async () => {
    const grown: number[] = [];
    let dropped = 0;
    for (const r of [...before.values()].filter(isOpenSummary).slice(0, 60)) {
      const w = sim.world;
      const index = w.runs.indexOfId(r.id) as number;
      const plan = w.runs.plan(index);
      const then = w.runs.versionAt(plan, micros(NOW)) as NonNullable<ReturnType<typeof w.runs.versionAt>>;
      const thenSteps = w.runs.detail(plan, then).steps as any[];
      const nowSteps = (await get(sim, `/api/v1/runs/${r.id}`)).body.data.steps as any[];
      grown.push(nowSteps.length - thenSteps.length);
      const nowIds = new Set(nowSteps.map((s) => s.id));
      if (thenSteps.some((s) => !nowIds.has(s.id))) dropped++;
    }
    expect(grown.filter((g) => g > 0).length).toBeGreaterThan(10);
    expect(dropped).toBeGreaterThan(0);
  });

  it('catalog objects are edited, unpublished or deleted, and new ones appear', async () => {
    let edited = 0;
    let vanished = 0;
    let added = 0;
    for (const p of catalogPaths) {
      const now = await pageAll(sim, `/api/v1/${p}`, { limit: 200 });
      const nowById = new Map(now.map((o) => [o.id, o]));
      for (const o of catalogBefore[p]!) {
        const cur = nowById.get(o.id);
        if (!cur) {
          vanished++;
          expect((await get(sim, `/api/v1/${p}/${encodeURIComponent(o.id)}`)).status).toBe(404);
        } else if (cur.updated_at !== o.updated_at) {
          edited++;
          expect(micros(cur.updated_at)).toBeGreaterThan(micros(o.updated_at));
          expect(JSON.stringify({ ...cur, updated_at: 0, last_run_at: 0 })).not.toBe(
            JSON.stringify({ ...o, updated_at: 0, last_run_at: 0 }),
          );
        }
      }
      added += now.filter((o) => !catalogBefore[p]!.some((b) => b.id === o.id)).length;
    }
    expect(edited).toBeGreaterThan(20);
    expect(vanished).toBeGreaterThan(2);
    expect(added).toBeGreaterThan(2);
  });

  it('unpublished guidelines or runbooks vanish from list and detail', async () => {
    const gone: string[] = [];
    for (const p of ['guidelines', 'runbooks']) {
      const now = new Set((await pageAll(sim, `/api/v1/${p}`)).map((o) => o.id));
      gone.push(...catalogBefore[p]!.filter((o) => !now.has(o.id)).map((o) => o.id));
    }
    expect(gone.length).toBeGreaterThan(0);
  });

  it("an agent's last_run_at follows its latest run", async () => {
    const agents = await pageAll(sim, '/api/v1/agents');
    const runs = await pageAll(sim, '/api/v1/runs', { limit: 100 });
    for (const a of agents.slice(0, 5)) {
      const latest = runs
        .filter((r) => r.agent?.id === a.id)
        .map((r) => micros(r.created_at))
        .sort((x, y) => y - x)[0];
      if (latest !== undefined) expect(micros(a.last_run_at)).toBe(latest);
    }
  });
});

describe('tool options on a moving clock', () => {
  it('keep counting exactly the runs whose tool-call steps used each name', async () => {
    const sim = await startSimulator({
      seed: 33,
      size: 500,
      now: NOW,
      rateLimit: { perKey: null },
      runs: { lateFraction: 0.2, postSettleFraction: 0.3 },
    });
    try {
      for (const step of [0, '7h', '45m', '2d', '9d', '3d'] as const) {
        sim.advance(step);
        const options = (await get(sim, '/api/v1/runs/tool-options')).body.data as {
          tool_name: string;
          run_count: number;
        }[];
        const want = new Map<string, number>();
        for (const run of sim.world.truthRunDetails()) {
          for (const n of new Set(
            (run.steps as any[]).filter((s) => s.type === 'tool_call').map((s) => s.tool.name as string),
          )) {
            want.set(n, (want.get(n) ?? 0) + 1);
          }
        }
        expect(new Map(options.map((o) => [o.tool_name, o.run_count])), `after ${step}`).toEqual(want);
      }
    } finally {
      await sim.close();
    }
  });
});

describe('late arrivals', () => {
  it('some runs appear only after the clock has passed their created_at', async () => {
    const sim = await startSimulator({
      seed: 32,
      size: 3000,
      now: NOW,
      rateLimit: { perKey: null },
      runs: { lateFraction: 0.2 },
    });
    try {
      const seen = new Set<string>();
      const window = { created_after: '2026-02-28T00:00:00Z' };
      for (const r of await pageAll(sim, '/api/v1/runs', { ...window, limit: 100 })) seen.add(r.id);
      let late = 0;
      for (let step = 0; step < 96; step++) {
        const previous = sim.clock.now();
        sim.advance('5m');
        for (const r of await pageAll(sim, '/api/v1/runs', { ...window, limit: 100 })) {
          if (seen.has(r.id)) continue;
          seen.add(r.id);
          if (micros(r.created_at) < previous) late++;
        }
      }
      expect(late).toBeGreaterThan(3);
    } finally {
      await sim.close();
    }
  });
});

describe('wall clock', () => {
  it('follows real time, faster when asked', async () => {
    const sim = await startSimulator({ seed: 1, size: 10, now: NOW, clock: 'wall', speed: 1000 });
    try {
      const t0 = sim.clock.now();
      await new Promise((r) => setTimeout(r, 100));
      expect(sim.clock.now() - t0).toBeGreaterThanOrEqual(50 * 1_000_000);
    } finally {
      await sim.close();
    }
  });
});
