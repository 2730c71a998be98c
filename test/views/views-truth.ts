import type { Json, Simulator } from '../../src/simulator/index.ts';
import { parseTimestamp, type Micros } from '../../src/util/timestamp.ts';

// What the ready-made views must answer, computed in plain TypeScript from the simulator's ground
// truth (run details, the catalog, the agents' states at each pass), never from the warehouse.

export interface TruthRun {
  id: string;
  created: Micros;
  day: string;
  status: string | null;
  resolution: string | null;
  waiting: boolean;
  duration: number;
  agentId: string | null;
  agentName: string | null;
  categoryId: string | null;
  categoryName: string | null;
  detail: Json;
}

const micros = (t: unknown): Micros => parseTimestamp(t as string) as Micros;
export const dayOf = (us: Micros): string => new Date(Math.floor(us / 1000)).toISOString().slice(0, 10);

/** Every run the warehouse holds after a pass at `passTime` (the window stops `settle` before it). */
export function truthRuns(sim: Simulator, before: Micros): TruthRun[] {
  const out: TruthRun[] = [];
  for (const d of sim.world.truthRunDetails()) {
    const created = micros(d.created_at);
    if (created >= before) continue;
    const agent = d.agent as { id?: string | null; name?: string | null } | null;
    const category = d.category as { id?: string | null; name?: string | null } | null;
    out.push({
      id: d.id as string,
      created,
      day: dayOf(created),
      status: (d.status as string | null) ?? null,
      resolution: (d.resolution as { type: string } | null)?.type ?? null,
      waiting: (d.approval as { waiting_for_approval: boolean }).waiting_for_approval,
      duration: d.duration_seconds as number,
      agentId: agent?.id ?? null,
      agentName: agent?.name ?? null,
      categoryId: category?.id ?? null,
      categoryName: category?.name ?? null,
      detail: d,
    });
  }
  return out;
}

export function groupBy<T>(items: readonly T[], key: (t: T) => string): Map<string, T[]> {
  const m = new Map<string, T[]>();
  for (const i of items) {
    const k = key(i);
    const list = m.get(k);
    if (list) list.push(i);
    else m.set(k, [i]);
  }
  return m;
}

export function median(values: readonly number[]): number | null {
  if (values.length === 0) return null;
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

const count = (runs: readonly TruthRun[], type: string | null) => runs.filter((r) => r.resolution === type).length;

export function resolutionCounts(runs: readonly TruthRun[]) {
  return {
    runs: runs.length,
    deflected: count(runs, 'deflected'),
    resolved: count(runs, 'resolved'),
    escalated: count(runs, 'escalated'),
    pending: count(runs, 'pending'),
    no_resolution: count(runs, null),
  };
}

/** The value the latest run had, among runs that had one. */
function latest(runs: readonly TruthRun[], pick: (r: TruthRun) => string | null): string | null {
  const named = runs.filter((r) => pick(r) !== null);
  return named.length ? pick(named.reduce((a, b) => (b.created > a.created ? b : a))) : null;
}

/** v_resolution_by_agent, keyed by agent id ('' for none). */
export function byAgent(sim: Simulator, runs: readonly TruthRun[]) {
  const live = new Map(sim.world.catalogObjects('agent').map((a) => [a.id as string, a.name as string]));
  const out = new Map<string, Record<string, unknown>>();
  for (const [id, group] of groupBy(runs, (r) => r.agentId ?? '')) {
    const c = resolutionCounts(group);
    out.set(id, {
      agent_name: live.get(id) ?? latest(group, (r) => r.agentName),
      in_catalog: live.has(id),
      ...c,
      deflection_rate: c.deflected / c.runs,
      escalation_rate: c.escalated / c.runs,
    });
  }
  return out;
}

/** v_resolution_by_category, keyed by category id ('' for none). */
export function byCategory(runs: readonly TruthRun[]) {
  const out = new Map<string, Record<string, unknown>>();
  for (const [id, group] of groupBy(runs, (r) => r.categoryId ?? '')) {
    const c = resolutionCounts(group);
    out.set(id, { category_name: latest(group, (r) => r.categoryName), ...c, deflection_rate: c.deflected / c.runs, escalation_rate: c.escalated / c.runs });
  }
  return out;
}

interface Call {
  run: string;
  name: string;
  type: string;
  error: boolean;
  duration: number;
}

/** v_tool_stats, keyed by tool name (the simulator's names are unique). */
export function toolStats(sim: Simulator, runs: readonly TruthRun[]) {
  const calls: Call[] = [];
  for (const r of runs) {
    for (const s of r.detail.steps as Json[]) {
      if (s.type !== 'tool_call') continue;
      const tool = s.tool as Json;
      calls.push({ run: r.id, name: tool.name as string, type: tool.type as string, error: ((tool.error as string | null) ?? '') !== '', duration: s.duration_seconds as number });
    }
  }
  const catalog = new Map(sim.world.catalogObjects('tool').map((t) => [t.name as string, t]));
  const labels = new Map(sim.world.toolOptions().map((o) => [o.tool_name as string, o.display_name as string]));
  const out = new Map<string, Record<string, unknown>>();
  for (const [name, group] of groupBy(calls, (c) => c.name)) {
    const tool = catalog.get(name);
    const errors = group.filter((c) => c.error).length;
    out.set(name, {
      tool_id: tool?.id ?? null,
      in_catalog: tool !== undefined,
      display_name: labels.get(name) ?? null,
      requires_approval: tool?.requires_approval ?? null,
      calls: group.length,
      errors,
      error_rate: errors / group.length,
      runs: new Set(group.map((c) => c.run)).size,
      median_duration_seconds: median(group.map((c) => c.duration)),
    });
  }
  for (const [name, tool] of catalog) {
    if (!out.has(name)) out.set(name, { tool_id: tool.id, in_catalog: true, display_name: labels.get(name) ?? null, requires_approval: tool.requires_approval, calls: 0, errors: 0, error_rate: null, runs: 0, median_duration_seconds: null });
  }
  return out;
}

/** v_runs_awaiting_approval: run id → pending tool name and the pending step's time. */
export function awaitingApproval(runs: readonly TruthRun[]) {
  const out = new Map<string, { tool: string | null; stepAt: Micros | null }>();
  for (const r of runs) {
    if (!r.waiting) continue;
    const pending = (r.detail.approval as { pending: Json | null }).pending;
    const step = (r.detail.steps as Json[]).find((s) => pending && s.id === pending.step_id);
    out.set(r.id, { tool: (pending?.tool_name as string | null) ?? null, stepAt: step ? micros(step.timestamp) : null });
  }
  return out;
}

interface Evaluation {
  run: string;
  attribute: string;
  name: string;
  value: string;
  recorded: Micros;
}

function evaluations(runs: readonly TruthRun[]): Evaluation[] {
  return runs.flatMap((r) =>
    (r.detail.evaluation_attributes as Json[]).map((e) => ({ run: r.id, attribute: e.attribute_id as string, name: e.name as string, value: e.value as string, recorded: micros(e.recorded_at) })),
  );
}

/** v_evaluation_values, keyed by `attribute_id value`. */
export function evaluationValues(runs: readonly TruthRun[]) {
  const all = evaluations(runs);
  const perAttribute = groupBy(all, (e) => e.attribute);
  const out = new Map<string, Record<string, unknown>>();
  for (const [key, group] of groupBy(all, (e) => `${e.attribute} ${e.value}`)) {
    const attr = perAttribute.get((group[0] as Evaluation).attribute) as Evaluation[];
    out.set(key, {
      attribute_name: attr.reduce((a, b) => (b.recorded > a.recorded ? b : a)).name,
      evaluations: group.length,
      runs: new Set(group.map((e) => e.run)).size,
      share: group.length / attr.length,
    });
  }
  return out;
}

/** v_evaluation_attributes, keyed by attribute id. */
export function evaluationAttributes(runs: readonly TruthRun[]) {
  const out = new Map<string, Record<string, unknown>>();
  for (const [id, group] of groupBy(evaluations(runs), (e) => e.attribute)) {
    const numbers = group.map((e) => e.value.trim()).filter((v) => v !== '' && Number.isFinite(Number(v))).map(Number);
    out.set(id, {
      evaluations: group.length,
      runs: new Set(group.map((e) => e.run)).size,
      distinct_values: new Set(group.map((e) => e.value)).size,
      numeric_evaluations: numbers.length,
      avg_numeric_value: numbers.length ? numbers.reduce((a, b) => a + b, 0) / numbers.length : null,
    });
  }
  return out;
}

interface AgentVersion {
  validFrom: Micros;
  updatedAt: Micros;
  deleted: boolean;
}

/**
 * The versions of each agent the warehouse has seen: the agent's state at each pass (a new
 * version when its updated_at moved, valid from that updated_at), and a deletion at the pass that
 * found it gone.
 */
export function agentVersions(sim: Simulator, passTimes: readonly Micros[]): Map<string, AgentVersion[]> {
  const catalog = sim.world.catalog;
  const out = new Map<string, AgentVersion[]>();
  for (const entity of catalog.entities.agent) {
    const versions: AgentVersion[] = [];
    for (const t of passTimes) {
      const state = catalog.stateAt(entity, t);
      const last = versions[versions.length - 1];
      if (state === null) {
        if (last && !last.deleted) versions.push({ validFrom: t, updatedAt: last.updatedAt, deleted: true });
      } else if (!last || last.deleted || state.updatedAt !== last.updatedAt) {
        versions.push({ validFrom: state.updatedAt, updatedAt: state.updatedAt, deleted: false });
      }
    }
    if (versions.length) out.set(entity.id, versions);
  }
  return out;
}

/** v_run_agent_config: run id → how the version was found and that version's updated_at. */
export function runAgentConfig(runs: readonly TruthRun[], versions: Map<string, AgentVersion[]>) {
  const out = new Map<string, { match: string; updatedAt: Micros | null; deleted: boolean | null }>();
  for (const r of runs) {
    const list = r.agentId ? versions.get(r.agentId) : undefined;
    if (!r.agentId) out.set(r.id, { match: 'no_agent', updatedAt: null, deleted: null });
    else if (!list) out.set(r.id, { match: 'agent_not_in_catalog', updatedAt: null, deleted: null });
    else {
      const inForce = list.filter((v) => v.validFrom <= r.created).pop();
      const v = inForce ?? (list[0] as AgentVersion);
      out.set(r.id, { match: inForce ? 'as_of_creation' : 'earliest_known', updatedAt: v.updatedAt, deleted: v.deleted });
    }
  }
  return out;
}
