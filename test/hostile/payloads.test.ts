import { describe, expect, it } from 'vitest';
import { wellFormedText } from '../../src/api/well-formed.ts';
import type { Json } from '../../src/simulator/catalog.ts';
import { isHostile } from '../../src/simulator/hostile.ts';
import { runPass } from '../../src/sync/index.ts';
import { openWarehouse } from '../../src/warehouse/index.ts';
import { diffWithTruth, engineFor, perTest, SETTLE } from '../sync/kit.ts';

// Payloads generators rarely make (the simulator's --hostile): NUL characters, lone surrogates,
// emoji and right-to-left text, 10 KB titles, multi-megabyte tool outputs, runs with thousands of
// messages and steps, tool input and output of every JSON type, member names with dots and
// spaces. Every one loads, and its text and JSON in DuckDB and in Parquet equal the API's, but for
// the one normalisation: a lone surrogate, which UTF-8 cannot hold, becomes U+FFFD.

function mended(v: unknown): unknown {
  if (typeof v === 'string') return wellFormedText(v);
  if (Array.isArray(v)) return v.map(mended);
  if (v !== null && typeof v === 'object')
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [wellFormedText(k), mended(x)]));
  return v;
}

describe('hostile payloads', () => {
  const each = perTest();

  it('load exactly into DuckDB and Parquet, within the memory budget', { timeout: 240_000 }, async () => {
    const seed = 51;
    const sim = await each.sim({
      seed,
      size: 300,
      days: 5,
      runs: { hostileFraction: 0.25, largeOutputFraction: 0.002, largeOutputBytes: 3_000_000 },
    });
    const dir = each.dir();
    const engine = engineFor({ sim, dir, env: { RUNSYNC_MEMORY_LIMIT: '400MB' } });
    try {
      const r = await runPass(engine.deps);
      expect(r.status, r.errors.join('\n')).toBe('ok');
      expect(r.runs.rejected).toBe(0);
    } finally {
      await engine.close();
    }
    expect(await diffWithTruth(sim, dir, sim.clock.now() - SETTLE)).toEqual([]);

    const hostile = [...sim.world.truthRunDetails()].filter((d) =>
      isHostile(seed, sim.world.runs.indexOfId(d.id as string) as number, 0.25),
    );
    expect(hostile.length).toBeGreaterThan(40);
    expect(hostile.some((d) => (d.steps as Json[]).length >= 2000)).toBe(true);
    const want = {
      titles: new Map(hostile.map((d) => [d.id as string, mended((d.ticket as Json).title)])),
      messages: new Map(
        hostile.flatMap((d) =>
          (d.conversation as Json[]).map((m) => [m.id as string, mended([m.message, m.user_name])]),
        ),
      ),
      tools: new Map(
        hostile.flatMap((d) =>
          (d.steps as Json[])
            .filter((s) => s.type === 'tool_call')
            .map((s) => [s.id as string, mended([(s.tool as Json).input, (s.tool as Json).output])]),
        ),
      ),
    };
    const wh = await openWarehouse(dir, { readOnly: true });
    try {
      for (const from of ['duckdb', 'parquet'] as const) {
        const t = (table: string) =>
          from === 'duckdb' ? table : `read_parquet('${dir}/parquet/${table}/**/*.parquet')`;
        const titles = await wh.all<{ id: string; v: string }>(`SELECT id, ticket_title AS v FROM ${t('runs')}`);
        const gotTitles = new Map(titles.filter((x) => want.titles.has(x.id)).map((x) => [x.id, x.v]));
        expect(gotTitles, from).toEqual(want.titles);
        const messages = await wh.all<{ id: string; m: string; u: string }>(
          `SELECT id, message AS m, user_name AS u FROM ${t('run_messages')}`,
        );
        const gotMessages = new Map(messages.filter((x) => want.messages.has(x.id)).map((x) => [x.id, [x.m, x.u]]));
        expect(gotMessages.size, from).toBe(want.messages.size);
        expect(gotMessages, from).toEqual(want.messages);
        const tools = await wh.all<{ id: string; i: string | null; o: string | null }>(
          `SELECT id, tool_input::VARCHAR AS i, tool_output::VARCHAR AS o FROM ${t('run_steps')}`,
        );
        const json = (v: string | null) => (v === null ? null : JSON.parse(v));
        const gotTools = new Map(tools.filter((x) => want.tools.has(x.id)).map((x) => [x.id, [json(x.i), json(x.o)]]));
        expect(gotTools, from).toEqual(want.tools);
      }
    } finally {
      await wh.close();
    }
  });
});
