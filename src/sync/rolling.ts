import { MICROS_PER_SECOND, type Micros } from '../util/timestamp.ts';
import { US_TO_TSTZ } from '../warehouse/sql.ts';
import { getState, setState } from '../warehouse/sync-state.ts';
import type { Warehouse } from '../warehouse/types.ts';
import { planWindow } from './live.ts';
import {
  fillStep,
  limitStep,
  planRollingStep,
  type RollingPlan,
  type RollingState,
  stepDone,
  verifiedSince,
} from './rolling-plan.ts';
import { ROLLING_KEY } from './state-keys.ts';
import type { RunCounts, SyncDeps } from './types.ts';
import { newWalk, readWalk, type WalkHooks, walkRuns } from './walk.ts';
import type { Window } from './window.ts';

// Rolling reconciliation, the walk: one step of the horizon per pass (rolling-plan.ts), listed by
// summaries like any window, fetching only what moved. The step's end becomes the position in the
// transaction of its last page; a step a killed pass left is finished by the next pass first.

export { ROLLING_KEY };

const ROLLING_WALK_KEY = 'runs.rolling.walk';

/** List requests a step may spend per run it re-lists (a page holds 100). */
const RUNS_PER_REQUEST = 100;
/** The least a step may take, whatever the budget: one page. */
const MIN_STEP_RUNS = RUNS_PER_REQUEST;

export interface RollingResult {
  step: Window | null;
  limitedByBudget: boolean;
  roundMicros: Micros;
  /** Every run of the horizon has been looked at since this time (null: no round yet). */
  verifiedSince: Micros | null;
}

function resultOf(state: RollingState): RollingResult {
  const { step, limitedByBudget, roundMicros } = state;
  return { step, limitedByBudget, roundMicros, verifiedSince: verifiedSince(state) };
}

/** Runs the step may re-list: its share of the key's rate over the time since the last step. */
async function allowedRuns(deps: SyncDeps, gap: Micros): Promise<number | null> {
  const rate = (await deps.budget?.snapshot())?.ratePerSecond ?? null;
  if (rate === null) return null;
  const requests = deps.settings.reconcileBudget * rate * (gap / MICROS_PER_SECOND);
  return Math.max(MIN_STEP_RUNS, Math.floor(requests) * RUNS_PER_REQUEST);
}

async function countRuns(wh: Warehouse, range: Window): Promise<number> {
  const [r] = await wh.all<{ n: bigint }>(
    `SELECT count(*) AS n FROM runs WHERE created_at >= ${US_TO_TSTZ('$1')} AND created_at < ${US_TO_TSTZ('$2')}`,
    [BigInt(range.from), BigInt(range.to)],
  );
  return Number(r?.n ?? 0);
}

/** Created time of the stored run just past the first `allowed` of the step (null: it holds fewer). */
async function cutAfter(wh: Warehouse, step: Window, allowed: number): Promise<Micros | null> {
  const [r] = await wh.all<{ c: bigint }>(
    `SELECT epoch_us(created_at) AS c FROM runs
     WHERE created_at >= ${US_TO_TSTZ('$1')} AND created_at < ${US_TO_TSTZ('$2')}
     ORDER BY created_at LIMIT 1 OFFSET $3`,
    [BigInt(step.from), BigInt(step.to), allowed],
  );
  return r ? (Number(r.c) as Micros) : null;
}

async function planStep(deps: SyncDeps, horizon: Window, every: Micros): Promise<RollingPlan> {
  const now = deps.now();
  return deps.gate.use(async (wh) => {
    const state = await getState<RollingState>(wh, ROLLING_KEY);
    let plan = planRollingStep({ state, now, horizon, every });
    const allowed = plan.step ? await allowedRuns(deps, plan.gap) : null;
    const planned = plan.step;
    if (plan.step && allowed !== null) {
      const cut = await cutAfter(wh, plan.step, allowed);
      if (cut !== null) plan = limitStep(plan, cut, allowed, await countRuns(wh, horizon));
    }
    // A step the budget cut ends on a whole page already (the allowance is whole pages).
    if (plan.step && plan.step.to === planned?.to) {
      // Requests are pages: a step ends where its stored runs fill its last one.
      const n = await countRuns(wh, plan.step);
      if (n % RUNS_PER_REQUEST !== 0) {
        const whole = Math.ceil(n / RUNS_PER_REQUEST) * RUNS_PER_REQUEST;
        const end = await cutAfter(wh, { from: plan.step.from, to: horizon.to }, whole);
        plan = fillStep(plan, end ?? horizon.to, horizon.to);
      }
    }
    await wh.transaction((tx) => setState(tx, ROLLING_KEY, plan.state, now));
    return plan;
  });
}

/**
 * One step of the rolling reconciliation over [horizon start, `before`): finishes the step a
 * killed pass left, or plans and walks the next one.
 */
export async function rollHorizon(deps: SyncDeps, before: Micros, counts: RunCounts): Promise<RollingResult | null> {
  const every = deps.settings.reconcileEvery;
  if (every === null) return null;
  const hooks: WalkHooks = {
    onSliceDone: async (tx, slice) => {
      const state = await getState<RollingState>(tx, ROLLING_KEY);
      if (state?.step && slice.to >= state.step.to) await setState(tx, ROLLING_KEY, stepDone(state), deps.now());
    },
  };
  const saved = await deps.gate.use((wh) => getState<RollingState>(wh, ROLLING_KEY));
  if (saved?.step) {
    const walk = await readWalk(deps, ROLLING_WALK_KEY);
    const same = walk && walk.from === saved.step.from && walk.to === saved.step.to && !walk.done;
    deps.logger.info({ from: saved.step.from, to: saved.step.to }, 'finishing the reconciliation step a pass left');
    await walkRuns(deps, ROLLING_WALK_KEY, same ? walk : newWalk(spec(saved.step), deps.now()), hooks, counts);
    return resultOf(saved);
  }
  const horizon = { from: (deps.now() - deps.settings.openRunHorizon) as Micros, to: before };
  const plan = await planStep(deps, horizon, every);
  const result = resultOf(plan.state);
  if (!plan.step) return result;
  const step = plan.step;
  const p = await deps.gate.use((wh) => planWindow(wh, deps, () => step));
  const walk = newWalk({ ...spec(step), sliceMicros: p.sliceMicros }, deps.now());
  await walkRuns(deps, ROLLING_WALK_KEY, walk, hooks, counts, p.stored);
  if (plan.state.limitedByBudget)
    deps.logger.info(
      { roundSeconds: Math.round(plan.state.roundMicros / MICROS_PER_SECOND) },
      'rolling reconciliation is held to RUNSYNC_RECONCILE_BUDGET: a round takes longer than RUNSYNC_RECONCILE_EVERY',
    );
  return result;
}

function spec(step: Window) {
  return { from: step.from, to: step.to, sliceMicros: step.to - step.from, filter: {}, force: false };
}
