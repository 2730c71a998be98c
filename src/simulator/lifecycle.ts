import {
  MICROS_PER_DAY,
  MICROS_PER_HOUR,
  MICROS_PER_MINUTE,
  MICROS_PER_SECOND,
  type Micros,
} from '../util/timestamp.ts';
import type { Rng } from './random.ts';
import type { PoolTool, RunVersion, StepSkeleton } from './runs.ts';
import { sentence } from './text.ts';

// The versions a run goes through, drawn from its own generator: running, paused, waiting for
// approval, scheduled to resume, settled, corrected later. The draws are made in a fixed order, so
// the same seed always gives the same lifecycle.

/** How often each kind of lifecycle is drawn. */
const KINDS: readonly (readonly [string, number])[] = [
  ['quick', 52],
  ['single', 10],
  ['failed', 7],
  ['cancelled', 2],
  ['approval', 10],
  ['scheduled', 5],
  ['pendingResolution', 8],
  ['longPaused', 4],
  ['stuck', 1],
  ['nullStatus', 1],
];

type Resolution = RunVersion['resolution'];

/** A lifecycle being drawn: its first version, and how the later ones are made. */
interface Draw {
  readonly rng: Rng;
  /** When the run was created. */
  readonly c: Micros;
  /** Steps of the whole run. */
  readonly steps: number;
  readonly start: RunVersion;
  /** A version at `at` with `part` of the run's steps and messages. */
  version(at: Micros, status: string | null, part: number, extra?: Partial<RunVersion>): RunVersion;
  /** The settled version: every step and message, its evaluations. */
  done(at: Micros, status: string | null, res: Resolution): RunVersion;
  /** A time between `min` and `max` after `t`, spread on a log scale. */
  after(t: Micros, min: number, max: number): Micros;
  resolution(type: string): Resolution;
  settledResolution(): Resolution;
  /** The run's duration at `at`, in seconds. */
  duration(at: Micros): number;
}

export function drawLifecycle(
  rng: Rng,
  c: Micros,
  steps: StepSkeleton[],
  o: { toolPool: readonly PoolTool[]; postSettleFraction: number },
): RunVersion[] {
  const d = startDraw(rng, c, steps.length);
  const kind = rng.weighted<string>(KINDS);
  const out = versionsOf(kind, d, steps, o.toolPool);
  const last = out[out.length - 1] as RunVersion;
  if (kind !== 'stuck' && rng.chance(o.postSettleFraction)) {
    // Settled, then changed again: an evaluation recorded late, sometimes a corrected resolution.
    const corrected = last.resolution && rng.chance(0.5) ? d.settledResolution() : last.resolution;
    out.push({
      ...last,
      at: d.after(last.at, MICROS_PER_HOUR, 10 * MICROS_PER_DAY),
      evals: last.evals + 1,
      resolution: corrected,
    });
  }
  // Sub-second jitter so versions carry microseconds.
  for (const ver of out) if (ver !== out[0]) ver.at += rng.int(1, 999_999);
  for (let k = 1; k < out.length; k++) {
    const cur = out[k] as RunVersion;
    const prev = out[k - 1] as RunVersion;
    if (cur.at <= prev.at) cur.at = prev.at + 1;
  }
  for (const ver of out)
    ver.duration = ver.status === 'running' || ver.status === 'paused' ? d.duration(ver.at) : ver.duration;
  return out;
}

function startDraw(rng: Rng, c: Micros, S: number): Draw {
  const M = rng.int(2, 24);
  const E = rng.int(1, 6);
  const integral = rng.chance(0.3);
  const duration = (at: Micros) => {
    const s = (at - c) / MICROS_PER_SECOND;
    return integral ? Math.round(s) : Math.round(s * 1000) / 1000;
  };
  const version = (at: Micros, status: string | null, part: number, extra: Partial<RunVersion> = {}): RunVersion => ({
    at,
    status,
    resolution: null,
    waiting: false,
    pendingStep: null,
    scheduledResumeAt: null,
    steps: Math.max(1, Math.ceil(S * part)),
    messages: Math.max(1, Math.ceil(M * part)),
    evals: 0,
    droppedStep: null,
    duration: duration(at),
    ...extra,
  });
  const resolution = (type: string) => ({ type, summary: sentence(rng, 4, 12) });
  const settledResolution = () =>
    resolution(
      rng.weighted([
        ['deflected', 45],
        ['resolved', 35],
        ['escalated', 20],
      ]),
    );
  const after = (t: Micros, min: number, max: number) => t + Math.floor(rng.logUniform(min, max));
  const start = version(c, 'running', 0.3, { resolution: rng.chance(0.3) ? resolution('pending') : null });
  const done = (at: Micros, status: string | null, res: Resolution) =>
    version(at, status, 1, { resolution: res, evals: E, droppedStep: rng.chance(0.1) ? 1 : null });
  return { rng, c, steps: S, start, version, done, after, resolution, settledResolution, duration };
}

/** The versions of a lifecycle of `kind`, up to where it settles (or, stuck, for ever paused). */
function versionsOf(kind: string, d: Draw, steps: StepSkeleton[], toolPool: readonly PoolTool[]): RunVersion[] {
  const { rng, c, start, done, after, resolution, settledResolution } = d;
  switch (kind) {
    case 'single':
      return [done(c, 'completed', settledResolution())];
    case 'nullStatus':
      return [done(c, null, null)];
    case 'quick':
      return [start, done(after(c, 20 * MICROS_PER_SECOND, 15 * MICROS_PER_MINUTE), 'completed', settledResolution())];
    case 'failed':
      return [
        start,
        done(
          after(c, 5 * MICROS_PER_SECOND, 5 * MICROS_PER_MINUTE),
          'failed',
          rng.chance(0.4) ? resolution('escalated') : null,
        ),
      ];
    case 'cancelled':
      return [start, done(after(c, 10 * MICROS_PER_SECOND, MICROS_PER_HOUR), 'cancelled', null)];
    case 'approval':
      return approvalVersions(d, steps, toolPool);
    case 'scheduled':
      return scheduledVersions(d);
    case 'pendingResolution': {
      const t1 = after(c, 30 * MICROS_PER_SECOND, 20 * MICROS_PER_MINUTE);
      const first = done(t1, 'completed', resolution('pending'));
      return [
        start,
        first,
        { ...first, at: after(t1, MICROS_PER_HOUR, 21 * MICROS_PER_DAY), resolution: settledResolution() },
      ];
    }
    case 'longPaused': {
      const t1 = after(c, MICROS_PER_MINUTE, MICROS_PER_HOUR);
      return [
        start,
        d.version(t1, 'paused', 0.5),
        done(
          t1 + Math.floor((7 + rng.next() * 18) * MICROS_PER_DAY),
          rng.chance(0.7) ? 'completed' : 'cancelled',
          settledResolution(),
        ),
      ];
    }
    default: // stuck: paused, never settles
      return [start, d.version(after(c, MICROS_PER_MINUTE, MICROS_PER_HOUR), 'paused', 0.5)];
  }
}

/** Paused for approval of a tool call, then running again, then settled. */
function approvalVersions(d: Draw, steps: StepSkeleton[], toolPool: readonly PoolTool[]): RunVersion[] {
  const { c, start, after } = d;
  // The step awaiting approval is a tool call to a tool that requires approval.
  const pending = Math.max(1, Math.floor(d.steps / 2));
  const toolIdx = toolPool.findIndex((t) => t.requiresApproval && t.id !== null);
  steps[pending] = { type: 'tool_call', tool: toolIdx };
  const t1 = after(c, 10 * MICROS_PER_SECOND, 5 * MICROS_PER_MINUTE);
  const t2 = after(t1, 5 * MICROS_PER_MINUTE, 5 * MICROS_PER_DAY);
  const t3 = after(t2, 10 * MICROS_PER_SECOND, 10 * MICROS_PER_MINUTE);
  return [
    start,
    d.version(t1, 'paused', 0.5, {
      waiting: true,
      pendingStep: pending,
      steps: pending + 1,
      resolution: start.resolution,
    }),
    d.version(t2, 'running', 0.7, {
      steps: Math.max(pending + 1, Math.ceil(d.steps * 0.7)),
      resolution: start.resolution,
    }),
    d.done(t3, 'completed', d.settledResolution()),
  ];
}

/** Paused until a time set for it to resume, then running again, then settled. */
function scheduledVersions(d: Draw): RunVersion[] {
  const { rng, c, start, after } = d;
  const t1 = after(c, 30 * MICROS_PER_SECOND, 10 * MICROS_PER_MINUTE);
  const resumeAt = after(t1, MICROS_PER_HOUR, 7 * MICROS_PER_DAY);
  return [
    start,
    d.version(t1, 'paused', 0.5, { scheduledResumeAt: resumeAt }),
    d.version(resumeAt + rng.int(0, 5 * MICROS_PER_SECOND), 'running', 0.7),
    d.done(
      after(resumeAt + 5 * MICROS_PER_SECOND, 10 * MICROS_PER_SECOND, 20 * MICROS_PER_MINUTE),
      'completed',
      d.settledResolution(),
    ),
  ];
}
