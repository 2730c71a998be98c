import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Simulator } from '../../src/simulator/index.ts';
import { formatTimestamp, MICROS_PER_DAY } from '../../src/util/timestamp.ts';
import { openWarehouse } from '../../src/warehouse/index.ts';
import { runMain } from '../support/cli.ts';
import { spanStart, startSim, tempDir } from '../sync/kit.ts';

// `runsync verify` and the ledger's line in `runsync status`, as a user runs them: a gap made in
// the warehouse shows in status (text and JSON), the dry run names it, exits 1 and asks for no
// detail, verify fetches exactly it; dates that are not whole past days are refused before any
// request.

describe('runsync verify', () => {
  let sim: Simulator;
  let tmp: ReturnType<typeof tempDir>;
  let env: Record<string, string>;
  beforeAll(async () => {
    sim = await startSim({ seed: 41, size: 160, days: 4 });
    tmp = tempDir();
    env = {
      RUNSYNC_API_URL: sim.url,
      RUNSYNC_API_KEY: sim.key,
      RUNSYNC_WAREHOUSE_DIR: tmp.dir,
      RUNSYNC_START_DATE: formatTimestamp(spanStart(sim)),
    };
  });
  afterAll(async () => {
    await sim?.close();
    tmp?.cleanup();
  });

  async function sql<T>(text: string, write = false): Promise<T[]> {
    const wh = await openWarehouse(tmp.dir, { readOnly: !write });
    try {
      return await wh.all<T>(text);
    } finally {
      await wh.close();
    }
  }

  it('says what status shows, repairs exactly the gap, and refuses dates it cannot list whole', async () => {
    expect((await runMain(['sync'], env)).code).toBe(0);
    const day = formatTimestamp(spanStart(sim)).slice(0, 10);
    const status = await runMain(['status'], env);
    expect(status.out).toMatch(/^completeness {2}all 4 days verified within \d+ s; 0 disagree$/m);

    const gone = (
      await sql<{ id: string }>(`SELECT id FROM runs WHERE created_date = DATE '${day}' ORDER BY id LIMIT 2`)
    ).map((r) => r.id);
    const [{ n } = { n: 0n }] = await sql<{ n: bigint }>(
      `SELECT listed_runs AS n FROM sync_completeness WHERE day = DATE '${day}'`,
    );
    await sql(`DELETE FROM runs WHERE id IN ('${gone.join("', '")}')`, true);
    const gap = await runMain(['status'], env);
    expect(gap.out).toContain(`1 disagree: ${day} (API ${n}, warehouse ${Number(n) - 2})`);
    const json = JSON.parse((await runMain(['status', '--json'], env)).out) as {
      completeness: { days: number; disagree: number; disagreeing: { day: string }[]; summary: string };
    };
    expect(json.completeness).toMatchObject({ days: 4, disagree: 1, disagreeing: [{ day }] });
    expect(json.completeness.summary).toContain('1 disagree');

    const details = () => sim.counters.count('runs.get');
    const before = details();
    const dry = await runMain(['verify', '--dry-run'], env);
    expect(dry.code).toBe(1);
    expect(dry.out).toContain('2 missing, 0 stale, 0 not listed');
    expect(dry.out).toContain(`missing in the warehouse: ${[...gone].sort().join(', ')}`);
    expect(dry.out).toContain('dry run: nothing fetched, nothing written');
    expect(details()).toBe(before);

    const to = formatTimestamp(spanStart(sim) + 4 * MICROS_PER_DAY).slice(0, 10);
    const fixed = await runMain(['verify', '--from', day, '--to', to], env);
    expect(fixed.err).toBe('');
    expect(fixed.code).toBe(0);
    expect(fixed.out).toContain('2 detail(s) loaded; 4 day(s) recorded in the completeness ledger');
    expect(details() - before).toBe(2);
    expect((await runMain(['status'], env)).out).toMatch(
      /^completeness {2}all 4 days verified within .*; 0 disagree$/m,
    );

    const requests = sim.counters.count();
    for (const [args, message] of [
      [['--from', '2026-02-30'], '--from must be a date such as 2026-01-31'],
      [['--to', 'yesterday'], '--to must be a date'],
      [['--from', '2026-02-27T06:00:00Z'], '--from must be a date'],
      [['--from', '2026-02-28', '--to', '2026-02-26'], '--from must be before --to'],
      [['--from', '2026-02-26', '--to', '2099-01-01'], 'a day not yet over cannot be listed whole'],
    ] as const) {
      const r = await runMain(['verify', ...args], env);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.err).toContain(message);
    }
    expect(sim.counters.count()).toBe(requests);
    const help = await runMain(['verify', '--help'], env);
    expect(help.out).toMatch(/--from <date>[\s\S]*--to <date>[\s\S]*--dry-run/);
    expect((await runMain(['--help'], env)).out).toMatch(/verify \[options\]/);
  });
});
