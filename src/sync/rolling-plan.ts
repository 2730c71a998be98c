import type { Micros } from '../util/timestamp.ts';
import type { Window } from './window.ts';

// Rolling reconciliation, the plan: the horizon's runs are re-listed by created time, a step per
// pass, in rounds. A round starts at the horizon's oldest end and ends where the live window
// begins (the live window re-lists the rest every pass). Each step covers the share of the horizon
// that lets a round end within RUNSYNC_RECONCILE_EVERY at the pace passes have come so far, so a
// run is looked at again no later than that after it was last looked at. The live window moves on
// between passes, so the horizon's end does too: a round ends with the step that reached the end
// as it stood then, and the next pass starts the next round. The budget
// (RUNSYNC_RECONCILE_BUDGET of the key's rate) may cut a step short: the round then takes longer,
// and the state says by how much.

export interface RollingState {
  /** Created time where the next step starts. */
  position: Micros;
  roundStartedAt: Micros;
  /** Created time where the round began (absent in states saved before it was kept). */
  roundFrom?: Micros;
  /** When the round before this one started: every run of the horizon was looked at since. */
  previousRoundStartedAt: Micros | null;
  /** When the last step was planned: the pace of passes. */
  steppedAt: Micros;
  /** The step being walked (its walk is saved apart); null between steps. */
  step: Window | null;
  /** The step reaches the end of the horizon: once it is walked, the round is over. */
  stepEndsRound?: boolean;
  /** The last round is over: the next step starts a new one. */
  roundDone?: boolean;
  /** A step of this round was cut short by the budget: the round takes about `roundMicros`. */
  limitedByBudget: boolean;
  /** How long a round takes at the current pace (and budget). */
  roundMicros: Micros;
}

export interface RollingInput {
  state: RollingState | undefined;
  now: Micros;
  /** The part of the horizon the live window does not re-list: [horizon start, live window start). */
  horizon: Window;
  every: Micros;
}

export interface RollingPlan {
  /** The step to walk now; null when there is nothing to walk this pass. */
  step: Window | null;
  state: RollingState;
  /** Time since the last step (at most the interval): what the budget allows is spread over it. */
  gap: Micros;
}

/** Passes a round is spread over, when passes come `gap` apart: one pass is kept in hand. */
export function stepsPerRound(every: Micros, gap: Micros): number {
  if (gap <= 0) return Number.POSITIVE_INFINITY;
  return Math.max(1, Math.floor(every / gap) - 1);
}

export function planRollingStep({ state, now, horizon, every }: RollingInput): RollingPlan {
  const span = Math.max(0, horizon.to - horizon.from);
  if (!state) {
    // The first pass lists the whole horizon by itself: the first round starts after it.
    const fresh: RollingState = {
      position: horizon.from,
      roundStartedAt: now,
      roundFrom: horizon.from,
      previousRoundStartedAt: null,
      steppedAt: now,
      step: null,
      limitedByBudget: false,
      roundMicros: every,
    };
    return { step: null, state: fresh, gap: 0 as Micros };
  }
  const gap = Math.min(now - state.steppedAt, every) as Micros;
  const steps = stepsPerRound(every, gap);
  if (!Number.isFinite(steps) || span === 0) return { step: null, state, gap };
  let { position, roundStartedAt, previousRoundStartedAt, limitedByBudget } = state;
  let roundFrom = state.roundFrom ?? position;
  if (position < horizon.from) position = horizon.from;
  if (position >= horizon.to || state.roundDone) {
    previousRoundStartedAt = roundStartedAt;
    roundStartedAt = now;
    position = horizon.from;
    roundFrom = position;
    limitedByBudget = false;
  }
  // Where the round should stand once this step is walked, by the time it has run: the round ends
  // a pass before the interval does. A step carried on to fill its last page, or passes that came
  // closer than the last, put the round ahead, and the next steps are shorter (or none), so the
  // round keeps to the interval and no faster. Behind (passes stopped a while), a step takes at
  // most twice its share until it is back on time.
  const share = Math.ceil(span / steps);
  const due = Math.min(1, (now - roundStartedAt + gap) / Math.max(gap, every - gap));
  const target = Math.ceil(roundFrom + due * Math.max(0, horizon.to - roundFrom));
  const to = Math.min(horizon.to, position + 2 * share, target) as Micros;
  if (to <= position) return { step: null, gap, state: { ...state, steppedAt: now } };
  const step = { from: position, to };
  return {
    step,
    gap,
    state: {
      position,
      roundStartedAt,
      roundFrom,
      previousRoundStartedAt,
      steppedAt: now,
      step,
      stepEndsRound: to === horizon.to,
      // A round held back by the budget once stays so until it ends: it ends late.
      limitedByBudget,
      roundMicros: (limitedByBudget ? Math.max(state.roundMicros, steps * gap) : steps * gap) as Micros,
    },
  };
}

/**
 * The step cut to the runs the budget allows: `cutAt` is the created time of the first stored run
 * past the allowance (null: the step holds no more than that). The round's length is estimated
 * from the share of the horizon's runs a step may take.
 */
export function limitStep(
  plan: RollingPlan,
  cutAt: Micros | null,
  allowedRuns: number,
  horizonRuns: number,
): RollingPlan {
  if (!plan.step || cutAt === null || cutAt >= plan.step.to || cutAt <= plan.step.from) return plan;
  const step = { from: plan.step.from, to: cutAt };
  const perRound = Math.ceil(horizonRuns / Math.max(1, allowedRuns)) * plan.gap;
  // A step catching up (up to twice its share) may pass the allowance while steps of the size the
  // allowance keeps still end the round in time: the round is slowed, not held back.
  if (perRound <= plan.state.roundMicros)
    return { ...plan, step, state: { ...plan.state, step, stepEndsRound: false } };
  const roundMicros = Math.max(plan.state.roundMicros, perRound) as Micros;
  return {
    ...plan,
    step,
    state: { ...plan.state, step, stepEndsRound: false, limitedByBudget: true, roundMicros },
  };
}

/**
 * The step carried on to `end` (the created time just past its last full page of stored runs), so
 * that its last request is not a page of a few runs; capped at the horizon's end.
 */
export function fillStep(plan: RollingPlan, end: Micros, horizonEnd: Micros): RollingPlan {
  if (!plan.step || end <= plan.step.to) return plan;
  const to = Math.min(end, horizonEnd) as Micros;
  const step = { from: plan.step.from, to };
  return { ...plan, step, state: { ...plan.state, step, stepEndsRound: to === horizonEnd } };
}

/** The state once a step's walk is done: the position moves to the step's end. */
export function stepDone(state: RollingState): RollingState {
  if (!state.step) return state;
  return {
    ...state,
    position: state.step.to,
    step: null,
    stepEndsRound: false,
    roundDone: state.stepEndsRound === true,
  };
}

/** The oldest time every run of the horizon is known to have been looked at since. */
export function verifiedSince(state: RollingState | undefined): Micros | null {
  if (!state) return null;
  return state.previousRoundStartedAt ?? state.roundStartedAt;
}
