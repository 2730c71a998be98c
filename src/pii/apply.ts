import type { Live } from './matcher.ts';
import type { PiiPolicy, PiiRule } from './types.ts';

// A policy applied to one payload, before anything of it reaches disk. Pure: the argument is not
// modified (what changes is copied, the rest shared), and idempotent: a hashed value is not hashed
// again, a placeholder not redacted again, a dropped member stays absent, so applying the policy to
// what the raw archive holds (rebuild) gives the same payload.
//
// A value is decided by the earliest rule whose path reaches it or a value around it; a dropped
// member goes with everything in it.

const DROP = Symbol('drop');
type Out = unknown | typeof DROP;

/** The payload of `resource` (its live table's name) with the policy applied. */
export function applyPolicy(policy: PiiPolicy, resource: string, payload: unknown): unknown {
  const rules = policy.resources.get(resource);
  if (!rules || payload === null || typeof payload !== 'object' || Array.isArray(payload)) return payload;
  let out = payload as Record<string, unknown>;
  if (rules.root.length) out = applyItem(policy, rules.rootStart, out) as Record<string, unknown>;
  for (const [member, start] of rules.childStarts) {
    const items = out[member];
    if (!Array.isArray(items)) continue;
    let changed = false;
    const next = items.map((item) => {
      const v = item !== null && typeof item === 'object' ? applyItem(policy, start, item) : item;
      if (v !== item) changed = true;
      return v;
    });
    if (changed) out = { ...out, [member]: next };
  }
  return out;
}

function applyItem(policy: PiiPolicy, start: Live, item: object): unknown {
  const v = walk(policy, item, start, null);
  return v === DROP ? item : v;
}

function walk(policy: PiiPolicy, value: unknown, live: Live, around: PiiRule | null): Out {
  const decider = live.decider(around);
  if (decider?.action === 'drop') return DROP;
  if (value === null || typeof value !== 'object') return decider ? scalar(policy, decider, value) : value;
  // Only rules earlier than the one deciding can still decide something below.
  const on = live.on(decider);
  if (on.empty) return decider ? whole(policy, decider, value) : value;
  if (Array.isArray(value)) {
    const next = on.next(null);
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
  for (const k in value) {
    if (!Object.hasOwn(value, k)) continue;
    const v = (value as Record<string, unknown>)[k];
    const next = on.next(k.toLowerCase());
    const w = !next.empty || decider ? walk(policy, v, next, decider) : v;
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
