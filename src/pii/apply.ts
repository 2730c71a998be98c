import { type PathState, reached, startState, step } from './paths.ts';
import type { PiiPolicy, PiiRule } from './types.ts';

// A policy applied to one payload, before anything of it reaches disk. Pure: the argument is not
// modified (what changes is copied, the rest shared), and idempotent: a hashed value is not hashed
// again, a placeholder not redacted again, a dropped member stays absent, so applying the policy to
// what the raw archive holds (rebuild) gives the same payload.
//
// A value is decided by the earliest rule whose path reaches it or a value around it; a dropped
// member goes with everything in it.

interface Live {
  readonly rule: PiiRule;
  readonly state: PathState;
}

const DROP = Symbol('drop');
type Out = unknown | typeof DROP;

/** The payload of `resource` (its live table's name) with the policy applied. */
export function applyPolicy(policy: PiiPolicy, resource: string, payload: unknown): unknown {
  const rules = policy.resources.get(resource);
  if (!rules || payload === null || typeof payload !== 'object' || Array.isArray(payload)) return payload;
  let out = payload as Record<string, unknown>;
  if (rules.root.length) out = applyItem(policy, rules.root, out) as Record<string, unknown>;
  for (const [member, childRules] of rules.children) {
    const items = out[member];
    if (!Array.isArray(items)) continue;
    let changed = false;
    const next = items.map((item) => {
      const v = item !== null && typeof item === 'object' ? applyItem(policy, childRules, item) : item;
      if (v !== item) changed = true;
      return v;
    });
    if (changed) out = { ...out, [member]: next };
  }
  return out;
}

function applyItem(policy: PiiPolicy, rules: readonly PiiRule[], item: object): unknown {
  const live = rules.map((rule) => ({ rule, state: startState(rule.path) }));
  const v = walk(policy, item, live, null);
  return v === DROP ? item : v;
}

function walk(policy: PiiPolicy, value: unknown, states: readonly Live[], inherited: PiiRule | null): Out {
  let decider = inherited;
  for (const s of states)
    if (reached(s.rule.path, s.state) && (decider === null || s.rule.order < decider.order)) decider = s.rule;
  if (decider?.action === 'drop') return DROP;
  // Only rules earlier than the one deciding can still decide something below.
  const live = states.filter(
    (s) => (decider === null || s.rule.order < decider.order) && s.state.some((p) => p < s.rule.path.length),
  );
  if (value === null || typeof value !== 'object') return decider ? scalar(policy, decider, value) : value;
  if (live.length === 0) return decider ? whole(policy, decider, value) : value;
  if (Array.isArray(value)) {
    const next = live.map((s) => ({ rule: s.rule, state: step(s.rule.path, s.state, null) }));
    let changed = false;
    const out: unknown[] = [];
    for (const item of value) {
      const v = walk(policy, item, next, decider);
      if (v !== item) changed = true;
      if (v !== DROP) out.push(v);
    }
    return changed ? out : value;
  }
  let out: Record<string, unknown> | null = null;
  for (const [k, v] of Object.entries(value)) {
    const lower = k.toLowerCase();
    const next: Live[] = [];
    for (const s of live) {
      const state = step(s.rule.path, s.state, lower);
      if (state.length) next.push({ rule: s.rule, state });
    }
    const w = next.length || decider ? walk(policy, v, next, decider) : v;
    if (w === v) continue;
    out ??= { ...(value as Record<string, unknown>) };
    if (w === DROP) delete out[k];
    else out[k] = w;
  }
  return out ?? value;
}

/** Every scalar of a value, by one rule. */
function whole(policy: PiiPolicy, rule: PiiRule, value: unknown): unknown {
  if (rule.action === 'keep') return value;
  if (value === null || typeof value !== 'object') return scalar(policy, rule, value);
  if (Array.isArray(value)) {
    let changed = false;
    const out = value.map((v) => {
      const w = whole(policy, rule, v);
      if (w !== v) changed = true;
      return w;
    });
    return changed ? out : value;
  }
  let out: Record<string, unknown> | null = null;
  for (const [k, v] of Object.entries(value)) {
    const w = whole(policy, rule, v);
    if (w === v) continue;
    out ??= { ...(value as Record<string, unknown>) };
    out[k] = w;
  }
  return out ?? value;
}

function scalar(policy: PiiPolicy, rule: PiiRule, value: unknown): unknown {
  if (rule.action === 'hash' && policy.hash) {
    if (typeof value === 'string') return policy.hash(value);
    if (typeof value === 'number' || typeof value === 'bigint') return policy.hash(String(value));
  } else if (rule.action === 'redact' && typeof value === 'string') {
    return policy.detectors.redact(value);
  }
  return value;
}
