import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRecordValidator, InvalidRecordError, type RunDetail, type RunSummary } from '../../src/api/index.ts';
import { createLogger } from '../../src/util/logger.ts';
import { collect, json, makeClient, type ScriptedServer, scriptedServer, startSim } from './test-kit.ts';

// Records are checked against schemas/api. In production a record keeps members nobody has heard
// of and values the spec does not enumerate; one that breaks a required member is reported (log,
// count, callback) and skipped while the rest of the sync goes on.

const KEY = 'svc_live_validate_test_key_00001';
let summary: RunSummary;
let detail: RunDetail;

beforeAll(async () => {
  const sim = await startSimulator();
  const t = makeClient(sim.url, sim.key);
  summary = (await t.client.listRuns({}, { limit: 1 })).items[0]!;
  detail = await t.client.getRun(summary.id);
  await t.client.close();
  await sim.close();
});

function startSimulator() {
  return startSim({ size: 20, rateLimit: { perKey: null } });
}

const clone = <T>(x: T): T => structuredClone(x);

describe('validator modes', () => {
  const lenient = createRecordValidator('lenient');
  const strict = createRecordValidator('strict');

  it('accepts unknown members and new values in lenient mode; strict mode flags the new values', () => {
    const r = { ...clone(summary), id: 'run_not_a_uuid', status: 'escalating', brand_new_member: { a: 1 } };
    expect(lenient.check('run-summary', r)).toEqual([]);
    expect(strict.check('run-summary', r).join(' ')).toMatch(/\/id must match format "uuid"/);
    const tool = {
      id: 'workflow:x',
      object: 'tool',
      type: 'workflow_tool',
      name: 'n',
      description: '',
      is_write_action: false,
      requires_approval: false,
      enabled: true,
      parameters: [],
      created_at: summary.created_at,
      updated_at: summary.updated_at,
    };
    expect(lenient.check('tool', tool)).toEqual([]);
    expect(strict.check('tool', tool).length).toBeGreaterThan(0);
  });

  it('flags a missing required member or a wrong type in either mode', () => {
    const { updated_at: _drop, ...missing } = clone(summary);
    expect(lenient.check('run-summary', missing)).toEqual([
      expect.stringMatching(/must have required property 'updated_at'/),
    ]);
    expect(lenient.check('run-summary', { ...clone(summary), duration_seconds: '12' })).toEqual([
      expect.stringMatching(/\/duration_seconds must be number/),
    ]);
    expect(
      lenient.check('run-detail', { ...clone(detail), steps: [{ ...detail.steps[0], order: 'first' }] }).join(),
    ).toMatch(/\/steps\/0\/order/);
  });

  it('refuses a created_at or updated_at that cannot be read as a timestamp', () => {
    expect(lenient.check('run-summary', { ...clone(summary), updated_at: 'yesterday' })).toEqual([
      '/updated_at is not an RFC 3339 date-time',
    ]);
  });
});

describe('the client with records that break the schema', () => {
  let server: ScriptedServer;
  const lines: string[] = [];

  beforeAll(async () => {
    const runs = [0, 1, 2, 3].map((i) => ({
      ...clone(summary),
      id: `0000000${i}-0000-4000-8000-000000000000`,
      extra: i,
    }));
    delete (runs[1] as Partial<RunSummary>).updated_at;
    (runs[2] as Record<string, unknown>).ticket = 'not an object';
    server = await scriptedServer((req, res) => {
      const path = req.url ?? '';
      if (path.split('?')[0] === '/api/v1/runs') {
        return json(
          res,
          200,
          { data: runs, pagination: { limit: 4, has_more: false, next_cursor: null } },
          {
            'x-ratelimit-limit': '100',
            'x-ratelimit-remaining': '99',
            'x-ratelimit-reset': '1',
          },
        );
      }
      const id = decodeURIComponent(path.split('/').pop() ?? '');
      const data = { ...clone(detail), id, future_field: 'kept' };
      if (id.startsWith('bad')) delete (data as Partial<RunDetail>).steps;
      json(res, 200, { data });
    });
  });
  afterAll(() => server.close());

  function client() {
    const logger = createLogger({
      destination: { write: (l: string) => lines.push(l) },
      level: 'warn',
      secrets: [KEY],
    });
    return makeClient(server.url, KEY, { validation: 'lenient', logger });
  }

  it('keeps the broken items of a page aside with why, the rest with their unknown members', async () => {
    const t = client();
    const pages = await collect(t.client.runPages());
    const got = pages.flatMap((p) => p.items);
    const refused = pages.flatMap((p) => p.refused);
    expect(got.map((r) => r.id)).toEqual([
      '00000000-0000-4000-8000-000000000000',
      '00000003-0000-4000-8000-000000000000',
    ]);
    expect(got[1]).toMatchObject({ extra: 3 });
    expect(refused.map((i) => i.recordId)).toEqual([
      '00000001-0000-4000-8000-000000000000',
      '00000002-0000-4000-8000-000000000000',
    ]);
    expect(refused[1]?.problems.join()).toMatch(/\/ticket must be object/);
    expect(refused[1]?.record).toMatchObject({ id: '00000002-0000-4000-8000-000000000000' });
    expect(t.client.stats().invalidRecords).toBe(2);
    expect(lines.filter((l) => l.includes('skipped a record that breaks its schema'))).toHaveLength(2);
    await t.client.close();
  });

  it('yields a broken detail as a failed item and goes on with the others', async () => {
    const t = client();
    const results = await collect(t.client.fetchRunDetails(['good-1', 'bad-1', 'good-2'], { concurrency: 1 }));
    const byId = Object.fromEntries(results.map((r) => [r.id, r]));
    expect(byId['good-1']).toMatchObject({ ok: true, value: { id: 'good-1', future_field: 'kept' } });
    expect(byId['good-2']?.ok).toBe(true);
    const bad = byId['bad-1'];
    expect(bad?.ok).toBe(false);
    if (bad && !bad.ok) {
      expect(bad.error).toBeInstanceOf(InvalidRecordError);
      expect((bad.error as InvalidRecordError).recordId).toBe('bad-1');
      expect((bad.error as InvalidRecordError).record).toMatchObject({ id: 'bad-1' });
    }
    expect(t.client.stats().invalidRecords).toBe(1);
    await t.client.close();
  });
});
