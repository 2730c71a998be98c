import { describe, expect, it } from 'vitest';
import {
  fillStep,
  limitStep,
  planRollingStep,
  type RollingState,
  stepDone,
  stepsPerRound,
  verifiedSince,
} from '../../src/sync/rolling-plan.ts';
import { MICROS_PER_DAY, MICROS_PER_MINUTE, MICROS_PER_SECOND, type Micros } from '../../src/util/timestamp.ts';

const HOUR = (60 * MICROS_PER_MINUTE) as Micros;
const EVERY = HOUR;

/**
 * Passes every `gap` over `duration`, with the horizon sliding with the clock: for every created
 * time sampled in the horizon (and entering it as the live window moves on), the longest it went
 * between two looks, or since the last one at the end (a look: a step covering it, the first pass,
 * or the live window, which re-lists a run until it enters the horizon).
 */
function simulate(gap: Micros, duration: Micros, horizonDays = 30): number {
  let state: RollingState | undefined;
  const start = 100 * MICROS_PER_DAY;
  const span = horizonDays * MICROS_PER_DAY + duration;
  const probes = Array.from({ length: 400 }, (_, i) => start - horizonDays * MICROS_PER_DAY + (i / 400) * span);
  const lastLook = new Map<number, number>();
  let worst = 0;
  let now = start;
  for (; now <= start + duration; now += gap) {
    const horizon = { from: (now - horizonDays * MICROS_PER_DAY) as Micros, to: (now - HOUR) as Micros };
    const plan = planRollingStep({ state, now: now as Micros, horizon, every: EVERY });
    for (const created of probes) {
      if (created < horizon.from) continue;
      if (created >= horizon.to || !lastLook.has(created)) {
        lastLook.set(created, now);
        continue;
      }
      const covered = state === undefined || (plan.step && created >= plan.step.from && created < plan.step.to);
      if (covered) {
        worst = Math.max(worst, now - (lastLook.get(created) as number));
        lastLook.set(created, now);
      }
    }
    state = stepDone(plan.state);
  }
  const end = now - gap;
  for (const [created, at] of lastLook)
    if (created >= end - horizonDays * MICROS_PER_DAY) worst = Math.max(worst, end - at);
  return worst;
}

describe('the rolling reconciliation plan', () => {
  it('spreads a round over the passes that fit in RUNSYNC_RECONCILE_EVERY, keeping one in hand', () => {
    expect(stepsPerRound(EVERY, (5 * MICROS_PER_MINUTE) as Micros)).toBe(11);
    expect(stepsPerRound(EVERY, (30 * MICROS_PER_MINUTE) as Micros)).toBe(1);
    expect(stepsPerRound(EVERY, EVERY)).toBe(1);
    expect(stepsPerRound(EVERY, 0 as Micros)).toBe(Number.POSITIVE_INFINITY);
  });

  it('looks at every run of the horizon again within the interval, at any pace of passes', () => {
    for (const minutes of [1, 5, 7, 20, 45, 90]) {
      const gap = (minutes * MICROS_PER_MINUTE) as Micros;
      const worst = simulate(gap, (6 * HOUR) as Micros);
      // A pass slower than the interval re-checks the whole horizon every time.
      expect(worst, `passes every ${minutes} min`).toBeLessThanOrEqual(Math.max(EVERY, gap));
    }
  });

  it('starts with the first pass (which lists the horizon itself) and walks nothing then', () => {
    const horizon = { from: 0 as Micros, to: (10 * MICROS_PER_DAY) as Micros };
    const plan = planRollingStep({ state: undefined, now: 5 as Micros, horizon, every: EVERY });
    expect(plan.step).toBeNull();
    expect(plan.state.position).toBe(0);
    expect(verifiedSince(plan.state)).toBe(5);
  });

  it('starts a new round at the horizon start once the last one reached the live window', () => {
    const horizon = { from: (2 * HOUR) as Micros, to: (50 * HOUR) as Micros };
    const state: RollingState = {
      position: horizon.to,
      roundStartedAt: HOUR as Micros,
      previousRoundStartedAt: null,
      steppedAt: (60 * HOUR) as Micros,
      step: null,
      limitedByBudget: false,
      roundMicros: EVERY,
    };
    const now = (60 * HOUR + 5 * MICROS_PER_MINUTE) as Micros;
    const plan = planRollingStep({ state, now, horizon, every: EVERY });
    expect(plan.step?.from).toBe(horizon.from);
    expect(plan.state.roundStartedAt).toBe(now);
    expect(plan.state.previousRoundStartedAt).toBe(HOUR);
    expect(verifiedSince(plan.state)).toBe(HOUR);
  });

  it('walks nothing when no time passed since the last step', () => {
    const horizon = { from: 0 as Micros, to: (10 * HOUR) as Micros };
    const first = planRollingStep({ state: undefined, now: HOUR, horizon, every: EVERY });
    expect(planRollingStep({ state: first.state, now: HOUR, horizon, every: EVERY }).step).toBeNull();
  });

  it('cuts a step to the runs the budget allows and says how long a round then takes', () => {
    const horizon = { from: 0 as Micros, to: (10 * HOUR) as Micros };
    const first = planRollingStep({ state: undefined, now: HOUR, horizon, every: EVERY });
    const gap = (30 * MICROS_PER_MINUTE) as Micros;
    const plan = planRollingStep({ state: first.state, now: (HOUR + gap) as Micros, horizon, every: EVERY });
    expect(plan.step).toEqual(horizon);
    expect(plan.gap).toBe(gap);
    const cut = limitStep(plan, (2 * HOUR) as Micros, 1_000, 10_000);
    expect(cut.step).toEqual({ from: 0, to: 2 * HOUR });
    expect(cut.state.limitedByBudget).toBe(true);
    expect(cut.state.roundMicros).toBe(10 * gap);
    // A cut outside the step leaves it whole.
    expect(limitStep(plan, null, 1_000, 500)).toBe(plan);
    expect(stepDone(cut.state).position).toBe(2 * HOUR);
  });

  it('cuts a catching-up step to the allowance without saying the round is held back', () => {
    const horizon = { from: 0 as Micros, to: (10 * HOUR) as Micros };
    const first = planRollingStep({ state: undefined, now: HOUR, horizon, every: EVERY });
    const gap = (6 * MICROS_PER_MINUTE) as Micros;
    const plan = planRollingStep({ state: first.state, now: (HOUR + gap) as Micros, horizon, every: EVERY });
    const cutAt = ((plan.step?.to as Micros) / 2) as Micros;
    // 2,000 of 10,000 runs a step: five steps a round, well within the interval.
    const cut = limitStep(plan, cutAt, 2_000, 10_000);
    expect(cut.step).toEqual({ from: 0, to: cutAt });
    expect(cut.state.limitedByBudget).toBe(false);
    expect(cut.state.roundMicros).toBe(plan.state.roundMicros);
    // 500 a step would take twenty steps: longer than the interval.
    expect(limitStep(plan, cutAt, 500, 10_000).state.limitedByBudget).toBe(true);
  });

  it('carries a step on to fill its last page, never past the horizon', () => {
    const horizon = { from: 0 as Micros, to: (10 * HOUR) as Micros };
    const first = planRollingStep({ state: undefined, now: HOUR, horizon, every: EVERY });
    const gap = (6 * MICROS_PER_MINUTE) as Micros;
    const plan = planRollingStep({ state: first.state, now: (HOUR + gap) as Micros, horizon, every: EVERY });
    const to = plan.step?.to as Micros;
    expect(to).toBeLessThan(horizon.to);
    const filled = fillStep(plan, (to + MICROS_PER_MINUTE) as Micros, horizon.to);
    expect(filled.step).toEqual({ from: 0, to: to + MICROS_PER_MINUTE });
    expect(filled.state.step).toEqual(filled.step);
    expect(filled.state.stepEndsRound).toBe(false);
    expect(stepDone(filled.state).position).toBe(to + MICROS_PER_MINUTE);
    // Never shorter, and the horizon's end ends the round.
    expect(fillStep(plan, (to - 1) as Micros, horizon.to)).toBe(plan);
    const last = fillStep(plan, (20 * HOUR) as Micros, horizon.to);
    expect(last.step?.to).toBe(horizon.to);
    expect(last.state.stepEndsRound).toBe(true);
  });

  it('keeps to the interval when steps are carried on to fill their last page', () => {
    // Passes every 6 s for two hours; every step carried on to the next "page" boundary, 0.7 of a
    // step's share apart, as stored runs filling a page would carry it.
    const gap = (6 * MICROS_PER_SECOND) as Micros;
    const horizonSpan = 30 * MICROS_PER_DAY;
    const page = Math.floor((0.7 * horizonSpan) / stepsPerRound(EVERY, gap));
    let state: RollingState | undefined;
    let walked = 0;
    let rounds = 0;
    const start = 100 * MICROS_PER_DAY;
    for (let now = start; now <= start + 2 * HOUR; now += gap) {
      const horizon = { from: (now - horizonSpan) as Micros, to: (now - HOUR) as Micros };
      let plan = planRollingStep({ state, now: now as Micros, horizon, every: EVERY });
      if (plan.step) {
        plan = fillStep(plan, (Math.ceil(plan.step.to / page) * page) as Micros, horizon.to);
        walked += (plan.step?.to ?? 0) - (plan.step?.from ?? 0);
        if (plan.state.stepEndsRound) rounds++;
      }
      state = stepDone(plan.state);
    }
    // Two hours walk two horizons (the first pass lists its own): not the half more the pages add.
    expect(walked / horizonSpan).toBeGreaterThan(1.9);
    expect(walked / horizonSpan).toBeLessThan(2.1);
    expect(rounds).toBe(2);
  });
});
