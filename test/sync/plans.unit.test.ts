import { describe, expect, it } from 'vitest';
import type { ListPage, RunSummary } from '../../src/api/index.ts';
import {
  ASSUMED_RATE,
  addYield,
  dueOpenRuns,
  OPEN_CHECK_SHARE,
  openCheckAllowance,
  planOpenChecks,
  RECHECK_FAST,
  RECHECK_MAX,
  RECHECK_MIN,
  RECHECK_SHARE,
  RECHECK_SLOW,
  RUNS_PER_REQUEST,
  recheckDue,
  runsPerRequestOf,
} from '../../src/sync/open-due.ts';
import { batchFilter, type OpenListing } from '../../src/sync/open-list.ts';
import {
  batchesCost,
  isOpenRun,
  type OpenRun,
  planTicketBatches,
  TICKETS_PER_REQUEST,
} from '../../src/sync/open-runs.ts';
import { judge } from '../../src/sync/walk.ts';
import { runsWindow, slices } from '../../src/sync/window.ts';
import {
  MICROS_PER_DAY,
  MICROS_PER_HOUR,
  MICROS_PER_MINUTE,
  MICROS_PER_SECOND,
  type Micros,
  parseTimestamp,
} from '../../src/util/timestamp.ts';

// The plans a pass makes before it sends anything: its window of created time and the slices of a
// range, which listed runs need their detail, and how open runs are grouped into ticket requests.

const T = (iso: string) => parseTimestamp(iso) as number;
const MIN = MICROS_PER_MINUTE;

describe('the live window', () => {
  const base = { startDate: T('2026-01-01T00:00:00Z'), lookback: 15 * MIN, settle: 5_000_000 };

  it('starts at RUNSYNC_START_DATE on a first pass and ends a little before the pass', () => {
    const passStart = T('2026-03-01T12:00:00Z');
    expect(runsWindow({ ...base, watermark: null, passStart })).toEqual({
      from: base.startDate,
      to: passStart - base.settle,
    });
  });

  it('reads the lookback again after the watermark, never before the start date', () => {
    const passStart = T('2026-03-01T12:00:00Z');
    const watermark = T('2026-03-01T11:55:00Z');
    expect(runsWindow({ ...base, watermark, passStart }).from).toBe(watermark - 15 * MIN);
    const early = T('2026-01-01T00:10:00Z');
    expect(runsWindow({ ...base, watermark: early, passStart }).from).toBe(base.startDate);
  });

  it('is empty, never inverted, when the clock stands behind the watermark', () => {
    const passStart = T('2026-03-01T12:00:00Z');
    const w = runsWindow({ ...base, watermark: passStart + 60 * MIN, passStart });
    expect(w.from).toBe(w.to);
  });
});

describe('slices of a range', () => {
  it('cover it end to end, half-open, the last one short', () => {
    const range = { from: T('2026-01-01T06:00:00Z'), to: T('2026-01-03T12:00:00Z') };
    const s = slices(range);
    expect(s).toHaveLength(3);
    expect(s[0]?.from).toBe(range.from);
    for (let i = 1; i < s.length; i++) expect(s[i]?.from).toBe(s[i - 1]?.to);
    expect(s.at(-1)?.to).toBe(range.to);
    expect(s.every((x) => x.to - x.from <= MICROS_PER_DAY && x.to > x.from)).toBe(true);
  });

  it('are none for an empty range, and refuse a size that would never end', () => {
    expect(slices({ from: 5, to: 5 })).toEqual([]);
    expect(() => slices({ from: 0, to: 10 }, 0)).toThrow(RangeError);
  });
});

function page(items: { id: string; updated_at: string }[]): ListPage<RunSummary> {
  return {
    items: items as unknown as RunSummary[],
    received: items.length,
    nextCursor: null,
    hasMore: false,
    cursor: null,
    requestId: null,
    part: 0,
    parts: 1,
    refused: [],
  };
}

describe('judging a page of summaries', () => {
  const stored = () => new Map([['a', T('2026-02-01T00:00:00.000001Z')]]);

  it('fetches new runs and runs whose updated_at moved, by the microsecond, and nothing else', () => {
    const j = judge(
      page([
        { id: 'a', updated_at: '2026-02-01T00:00:00.000002Z' },
        { id: 'b', updated_at: '2026-02-01T00:00:00Z' },
      ]),
      stored(),
      false,
    );
    expect(j.fetch).toEqual(['a', 'b']);
    expect([j.fresh, j.changed, j.unchanged]).toEqual([1, 1, 0]);
    const same = judge(page([{ id: 'a', updated_at: '2026-02-01T00:00:00.000001Z' }]), stored(), false);
    expect(same.fetch).toEqual([]);
    expect(same.unchanged).toBe(1);
  });

  it('does not fetch a run older than the stored one, unless forced', () => {
    const older = page([{ id: 'a', updated_at: '2026-01-01T00:00:00Z' }]);
    expect(judge(older, stored(), false).fetch).toEqual([]);
    expect(judge(older, stored(), true).fetch).toEqual(['a']);
  });

  it('asks once for a run listed twice, in one page or in the next', () => {
    const known = stored();
    const first = judge(
      page([
        { id: 'c', updated_at: '2026-02-02T00:00:00Z' },
        { id: 'c', updated_at: '2026-02-02T00:00:00Z' },
      ]),
      known,
      false,
    );
    expect(first.fetch).toEqual(['c']);
    expect(judge(page([{ id: 'c', updated_at: '2026-02-02T00:00:00Z' }]), known, false).fetch).toEqual([]);
    // It moved again while the walk went on: asked for again.
    expect(judge(page([{ id: 'c', updated_at: '2026-02-03T00:00:00Z' }]), known, false).fetch).toEqual(['c']);
  });

  it('fetches a run whose updated_at cannot be read, rather than trusting it unchanged', () => {
    expect(judge(page([{ id: 'a', updated_at: 'yesterday' }]), stored(), false).fetch).toEqual(['a']);
  });
});

describe('open runs', () => {
  const summary = { status: 'completed', approval: { waiting_for_approval: false }, scheduled_resume_at: null };

  it('are those running, paused, waiting for approval, scheduled to resume or pending resolution', () => {
    const open = (o: object) => isOpenRun({ ...summary, resolution: null, ...o } as Parameters<typeof isOpenRun>[0]);
    expect(open({})).toBe(false);
    expect(open({ status: 'failed', resolution: { type: 'escalated', summary: '' } })).toBe(false);
    expect(open({ status: 'running' })).toBe(true);
    expect(open({ status: 'paused' })).toBe(true);
    expect(open({ approval: { waiting_for_approval: true } })).toBe(true);
    expect(open({ scheduled_resume_at: '2026-03-01T00:00:00Z' })).toBe(true);
    expect(open({ resolution: { type: 'pending', summary: '' } })).toBe(true);
  });

  const run = (i: number, ticketId: string | null): OpenRun => ({
    id: `r${i}`,
    ticketId,
    createdAt: 1_000 + i,
    updatedAt: 2_000 + i,
    lastCheckedAt: null,
    scheduledResumeAt: null,
  });

  it("stop a batch before its tickets' stored runs would fill a third page", () => {
    // Three runs stored on each ticket: 66 tickets list 198 runs, two pages; a 67th would need a third.
    const runs = Array.from({ length: 150 }, (_, i) => ({ ...run(i, `t${i}`), ticketRuns: 3 }));
    // A ticket with more runs than two pages takes a batch of its own.
    runs.push({ ...run(150, 'busy'), ticketRuns: 500 }, { ...run(151, 'after'), ticketRuns: 1 });
    const { batches } = planTicketBatches(runs);
    expect(batches.map((b) => b.tickets.length)).toEqual([66, 66, 18, 1, 1]);
    expect(batches[3]?.tickets).toEqual(['busy']);
    expect(batches.flatMap((b) => [...b.runs.keys()]).sort()).toEqual(runs.map((r) => r.id).sort());
  });

  it(`are asked about ${TICKETS_PER_REQUEST} tickets a request, runs of one ticket together`, () => {
    const runs = Array.from({ length: 450 }, (_, i) => run(i, `t${i}`));
    // Tickets met again later (oldest first) go with the batch being filled then.
    runs.push(run(450, 't5'), run(451, 't449'));
    const { batches, byId } = planTicketBatches(runs);
    expect(byId).toEqual([]);
    expect(batches.map((b) => b.tickets.length)).toEqual([200, 200, 51]);
    const all = batches.flatMap((b) => [...b.runs.keys()]);
    expect(all.sort()).toEqual(runs.map((r) => r.id).sort());
    for (const b of batches) {
      for (const r of b.runs.values()) {
        expect(b.tickets).toContain(r.ticketId);
        expect(r.createdAt >= b.createdFrom && r.createdAt < b.createdTo).toBe(true);
      }
    }
  });

  it('are listed by the state that keeps them open, so settled runs of their tickets take no room', () => {
    const kinds: OpenListing[] = ['state', 'pending', 'any'];
    const runs = Array.from({ length: 9 }, (_, i) => ({ ...run(i, `t${i}`), listing: kinds[i % 3] }));
    const { batches } = planTicketBatches(runs);
    expect(batches.map((b) => [b.listing, b.tickets])).toEqual([
      ['state', ['t0', 't3', 't6']],
      ['pending', ['t1', 't4', 't7']],
      ['any', ['t2', 't5', 't8']],
    ]);
    expect(batches.map(batchFilter)).toEqual([
      { ticketId: ['t0', 't3', 't6'], status: ['running', 'paused'] },
      { ticketId: ['t1', 't4', 't7'], resolutionType: ['pending'] },
      { ticketId: ['t2', 't5', 't8'] },
    ]);
  });

  it('that no ticket filter can name are fetched by id', () => {
    const long = 'x'.repeat(201);
    const { batches, byId } = planTicketBatches([run(1, null), run(2, ''), run(3, long), run(4, 'ok')]);
    expect(byId.map((r) => r.id)).toEqual(['r1', 'r2', 'r3']);
    expect(batches).toHaveLength(1);
    expect(batches[0]?.tickets).toEqual(['ok']);
  });
});

describe('open runs due for a re-check', () => {
  const SEC = MICROS_PER_SECOND;
  const now = 1_000_000 * SEC;
  const run = (quietFor: number, lookedAgo: number | null, resumeIn: number | null = null) => ({
    updatedAt: now - (lookedAgo ?? 0) - quietFor,
    lastCheckedAt: lookedAgo === null ? null : now - lookedAgo,
    scheduledResumeAt: resumeIn === null ? null : now + resumeIn,
  });

  it('are those never looked at, and those quiet for a while looked at an eighth of that ago', () => {
    expect(recheckDue(run(0, null), now)).toBe(true);
    // Quiet for 8 minutes when last looked at: due a minute later, not before.
    expect(recheckDue(run(8 * MIN, 59 * SEC), now)).toBe(false);
    expect(recheckDue(run(8 * MIN, 60 * SEC), now)).toBe(true);
  });

  it('are looked at no more often than RECHECK_MIN, and never less often than RECHECK_MAX', () => {
    expect(recheckDue(run(0, RECHECK_MIN - 1), now)).toBe(false);
    expect(recheckDue(run(0, RECHECK_MIN), now)).toBe(true);
    expect(recheckDue(run(30 * MICROS_PER_DAY, RECHECK_MAX - 1), now)).toBe(false);
    expect(recheckDue(run(30 * MICROS_PER_DAY, RECHECK_MAX), now)).toBe(true);
  });

  it('include a run scheduled to resume as soon as its time has come', () => {
    expect(recheckDue(run(MICROS_PER_DAY, SEC, -1), now)).toBe(true);
    expect(recheckDue(run(MICROS_PER_DAY, SEC, 60 * SEC), now)).toBe(false);
  });

  describe("once the key's rate is known", () => {
    const many = (n: number, quietFor: number, lookedAgo: number, tag: string) =>
      Array.from({ length: n }, (_, i) => ({ ...run(quietFor, lookedAgo), id: `${tag}${i}` }));

    it('looks at every open run within RECHECK_FAST while their looks fit the share', () => {
      const runs = many(100, 30 * MICROS_PER_DAY, RECHECK_FAST, 'q');
      expect(dueOpenRuns(runs, now, 50)).toHaveLength(100);
      // With passes 5 s apart, a pass takes early only its share of those past half their interval.
      const lastPass = many(1, 30 * MICROS_PER_DAY, 5 * SEC, 'p');
      const early = many(100, 30 * MICROS_PER_DAY, RECHECK_FAST - SEC, 'q');
      expect(dueOpenRuns([...early, ...lastPass], now, 50)).toHaveLength(Math.floor((101 * 5) / 45));
      const young = many(100, 30 * MICROS_PER_DAY, RECHECK_FAST / 2 - SEC, 'q');
      expect(dueOpenRuns([...young, ...lastPass], now, 50)).toHaveLength(0);
    });

    it('spreads runs looked at in one pass over the passes of their interval', () => {
      // 900 runs of the fast lane, all looked at by one pass; passes every 5 s from then on.
      const step = 5 * SEC;
      const runs = many(900, 30 * MICROS_PER_DAY, 0, 'q');
      const byId = new Map(runs.map((r, i) => [`q${i}`, r]));
      const taken: number[] = [];
      let longest = 0;
      for (let t = now + step; t <= now + 6 * RECHECK_FAST; t += step) {
        const due = dueOpenRuns([...byId.values()], t as Micros, 50);
        taken.push(due.length);
        for (const r of due) {
          longest = Math.max(longest, t - (r.lastCheckedAt ?? t));
          r.lastCheckedAt = t;
        }
      }
      // Without spreading, a pass every 45 s takes all 900 and the others none.
      const later = taken.slice(taken.length / 2);
      expect(Math.max(...later)).toBeLessThanOrEqual(200);
      expect(later.reduce((a, b) => a + b, 0) / later.length).toBeGreaterThan(90);
      expect(longest).toBeLessThanOrEqual(RECHECK_FAST);
    });

    it('gives the fast lane to the least quiet runs, and looks at the rest every RECHECK_SLOW', () => {
      const rate = 10;
      // Looks per second the share allows, at one look per RECHECK_FAST each.
      const fit = Math.floor((RECHECK_SHARE * rate * 80 * RECHECK_FAST) / MICROS_PER_SECOND);
      const recent = many(50, 2 * MICROS_PER_HOUR, RECHECK_FAST, 'recent');
      const idle = many(2 * fit, 20 * MICROS_PER_DAY, RECHECK_FAST, 'idle');
      const due = dueOpenRuns([...idle, ...recent], now, rate);
      expect(due.filter((r) => r.id.startsWith('recent'))).toHaveLength(50);
      const idleDue = due.filter((r) => r.id.startsWith('idle')).length;
      expect(idleDue).toBeGreaterThan(fit - 60);
      expect(idleDue).toBeLessThanOrEqual(fit - 50);
      // Those left out come due after RECHECK_SLOW; never looked at, at once.
      expect(dueOpenRuns(many(3 * fit, 20 * MICROS_PER_DAY, RECHECK_SLOW, 'idle'), now, rate)).toHaveLength(3 * fit);
      const fresh = many(3 * fit, 20 * MICROS_PER_DAY, RECHECK_FAST, 'idle').map((r) => ({
        ...r,
        lastCheckedAt: null,
      }));
      expect(dueOpenRuns(fresh, now, rate)).toHaveLength(3 * fit);
    });

    it('sizes the fast lane by the runs a request has been found to answer for', () => {
      const rate = 10;
      const fitting = (perRequest: number) =>
        Math.floor((RECHECK_SHARE * rate * perRequest * RECHECK_FAST) / MICROS_PER_SECOND);
      const idle = many(4 * fitting(RUNS_PER_REQUEST), 20 * MICROS_PER_DAY, RECHECK_FAST, 'idle');
      const measured = addYield(addYield(null, 1200, 10), 800, 10);
      expect(runsPerRequestOf(measured)).toBe(100);
      expect(dueOpenRuns(idle, now, rate).length).toBeLessThanOrEqual(fitting(RUNS_PER_REQUEST));
      const due = dueOpenRuns(idle, now, rate, undefined, runsPerRequestOf(measured)).length;
      expect(due).toBeGreaterThan(fitting(100) - 2);
      expect(due).toBeLessThanOrEqual(fitting(100));
      // Too few requests to go by, and a figure no request can reach, are not trusted.
      expect(runsPerRequestOf(addYield(null, 900, 3))).toBe(RUNS_PER_REQUEST);
      expect(runsPerRequestOf(addYield(null, 90_000, 30))).toBe(200);
      // Older passes weigh less as requests add up.
      const halved = addYield({ looks: 40_000, requests: 1000 }, 10_000, 50);
      expect(halved.requests).toBe(525);
      expect(runsPerRequestOf(halved)).toBeCloseTo(50_000 / 1050, 6);
    });

    it('looks at every open run every pass when passes come further apart than the share needs', () => {
      const rate = 10;
      const fit = Math.floor((RECHECK_SHARE * rate * 80 * RECHECK_FAST) / MICROS_PER_SECOND);
      // Passes 5 minutes apart: a look a pass costs a seventh of a look every 45 s.
      const idle = many(5 * fit, 20 * MICROS_PER_DAY, 5 * MICROS_PER_MINUTE, 'idle');
      expect(dueOpenRuns(idle, now, rate)).toHaveLength(5 * fit);
      expect(
        dueOpenRuns(many(8 * fit, 20 * MICROS_PER_DAY, 5 * MICROS_PER_MINUTE, 'idle'), now, rate).length,
      ).toBeLessThan(7 * fit);
    });

    it('keeps the two-minute bound while the rate is not known', () => {
      const runs = many(10_000, 20 * MICROS_PER_DAY, RECHECK_MAX, 'q');
      expect(dueOpenRuns(runs, now, null)).toHaveLength(10_000);
      expect(dueOpenRuns(many(10, 20 * MICROS_PER_DAY, RECHECK_MAX - 1, 'q'), now, null)).toHaveLength(0);
    });
  });
});

describe('open runs a pass checks', () => {
  const SEC = MICROS_PER_SECOND;
  const now = 1_000_000 * SEC;
  // Quiet for days, looked at `ago` before now: never due in a pass soon after.
  const quiet = (n: number, ago: number) =>
    Array.from({ length: n }, (_, i) => ({
      id: `r${i}`,
      updatedAt: now - ago - 5 * MICROS_PER_DAY,
      lastCheckedAt: now - ago,
      scheduledResumeAt: null,
    }));

  it('are all of them when that fits their share of the rate since the last check, due or not', () => {
    const runs = quiet(500, 20 * SEC);
    // 20 s at 10 requests a second: 40 requests for open-run checks.
    const allowed = (OPEN_CHECK_SHARE * 10 * 20 * SEC) / SEC;
    expect(openCheckAllowance(runs, now, 10)).toBeCloseTo(allowed);
    const plan = planOpenChecks(runs, now, { ratePerSecond: 10, costOfAll: Math.floor(allowed) });
    expect(plan).toEqual({ check: runs, deferred: 0, longestUnchecked: 0 });
    // Not known: the share of ASSUMED_RATE.
    expect(
      planOpenChecks(runs, now, { ratePerSecond: null, costOfAll: OPEN_CHECK_SHARE * ASSUMED_RATE * 20 }).deferred,
    ).toBe(0);
  });

  it('are those due when all would cost more, and the pass counts the rest deferred', () => {
    const runs = quiet(500, 20 * SEC);
    const plan = planOpenChecks(runs, now, { ratePerSecond: 10, costOfAll: 41 });
    expect(plan.check).toEqual([]);
    expect(plan.deferred).toBe(500);
    expect(plan.longestUnchecked).toBe(20 * SEC);
    // --all-open: every one, whatever it costs.
    expect(planOpenChecks(runs, now, { ratePerSecond: 10, costOfAll: 10_000, all: true }).check).toHaveLength(500);
  });

  it('are all of them when none was ever checked', () => {
    const never = quiet(3, 0).map((r) => ({ ...r, lastCheckedAt: null }));
    expect(planOpenChecks(never, now, { ratePerSecond: 1, costOfAll: 1e9 }).deferred).toBe(0);
  });

  it('cost a request per page their ticket batches list and one per run no filter can name', () => {
    const open = (id: string, ticketId: string | null, ticketRuns = 1): OpenRun => ({
      id,
      ticketId,
      createdAt: 1,
      updatedAt: 1,
      lastCheckedAt: null,
      scheduledResumeAt: null,
      ticketRuns,
      listing: 'state',
    });
    const runs = [open('a', 't1', 150), open('b', 't2'), open('c', null), open('d', '')];
    // t1 and t2 in one batch of 151 runs: two pages; c and d by id.
    expect(batchesCost(planTicketBatches(runs))).toBe(4);
  });
});
