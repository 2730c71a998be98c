import type { Json, Simulator } from '../../src/simulator/index.ts';
import { type Micros, parseTimestamp } from '../../src/util/timestamp.ts';

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

/**
 * Every run the warehouse holds after a pass at `passTime` (the window stops `settle` before it).
 * `as` gives a run's detail as the client received it, when something between rewrote it.
 */
export function truthRuns(sim: Simulator, before: Micros, as: (detail: Json) => Json = (d) => d): TruthRun[] {
  const out: TruthRun[] = [];
  for (const raw of sim.world.truthRunDetails()) {
    const d = as(raw);
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

/**
 * The catalog objects of one kind the warehouse saw: as each pass found them (`rename` gives an
 * object as the client received it at pass n), the live ones (found by the last pass) and each
 * one's last version.
 */
export interface SeenCatalog {
  live: Map<string, Json>;
  last: Map<string, Json>;
  /** Every version seen, oldest pass first. */
  versions: { pass: number; object: Json }[];
}

export function seenCatalog(
  sim: Simulator,
  kind: 'agent' | 'tool',
  passTimes: readonly Micros[],
  rename: (object: Json, pass: number) => Json = (o) => o,
): SeenCatalog {
  const catalog = sim.world.catalog;
  const out: SeenCatalog = { live: new Map(), last: new Map(), versions: [] };
  passTimes.forEach((t, pass) => {
    for (const entity of catalog.entities[kind]) {
      const state = catalog.stateAt(entity, t);
      if (state === null) continue;
      const object = rename(catalog.render(state), pass);
      out.versions.push({ pass, object });
      out.last.set(entity.id, object);
      if (pass === passTimes.length - 1) out.live.set(entity.id, object);
    }
  });
  return out;
}

/** v_resolution_by_agent, keyed by agent id ('' for none). */
export function byAgent(agents: SeenCatalog, runs: readonly TruthRun[]) {
  const out = new Map<string, Record<string, unknown>>();
  for (const [id, group] of groupBy(runs, (r) => r.agentId ?? '')) {
    const c = resolutionCounts(group);
    const name =
      id === ''
        ? '(no agent)'
        : ((agents.live.get(id)?.name as string | undefined) ??
          (agents.last.get(id)?.name as string | undefined) ??
          latest(group, (r) => r.agentName) ??
          '(unnamed agent)');
    out.set(id, {
      agent_name: name,
      in_catalog: agents.live.has(id),
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
    out.set(id, {
      category_name: id === '' ? '(no category)' : (latest(group, (r) => r.categoryName) ?? '(unnamed category)'),
      ...c,
      deflection_rate: c.deflected / c.runs,
      escalation_rate: c.escalated / c.runs,
    });
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

/**
 * The catalog tool a recorded name stands for: the live tool of that name (of the same type first),
 * else the tool that had that name in a version seen earlier (the latest such version first).
 */
function toolFor(tools: SeenCatalog, name: string, type: string): string | null {
  const rank = (o: Json) => (o.type === type ? 0 : 1);
  const live = [...tools.live.values()].filter((o) => o.name === name);
  live.sort((a, b) => rank(a) - rank(b) || ((a.id as string) < (b.id as string) ? -1 : 1));
  if (live[0]) return live[0].id as string;
  const former = tools.versions.filter((v) => v.object.name === name);
  former.sort((a, b) => rank(a.object) - rank(b.object) || b.pass - a.pass);
  return (former[0]?.object.id as string | undefined) ?? null;
}

/**
 * v_tool_stats, keyed by tool id (or, for calls no catalog version named, `name type`).
 * `labels`: the tool options' display names by recorded name.
 */
export function toolStats(tools: SeenCatalog, labels: Map<string, string>, runs: readonly TruthRun[]) {
  const calls: (Call & { key: string; id: string | null })[] = [];
  for (const r of runs) {
    for (const s of r.detail.steps as Json[]) {
      if (s.type !== 'tool_call') continue;
      const tool = s.tool as Json;
      const name = tool.name as string;
      const type = tool.type as string;
      const id = toolFor(tools, name, type);
      calls.push({
        key: id ?? `${name} ${type}`,
        id,
        run: r.id,
        name,
        type,
        error: ((tool.error as string | null) ?? '') !== '',
        duration: s.duration_seconds as number,
      });
    }
  }
  const out = new Map<string, Record<string, unknown>>();
  const row = (id: string | null, fallbackName: string, group: Call[]) => {
    const tool = id ? (tools.live.get(id) ?? tools.last.get(id)) : undefined;
    const name = (tool?.name as string | undefined) ?? fallbackName;
    const errors = group.filter((c) => c.error).length;
    return {
      tool_name: name,
      tool_id: id,
      in_catalog: id !== null && tools.live.has(id),
      display_name: labels.get(name) ?? null,
      requires_approval: id !== null && tools.live.has(id) ? tools.live.get(id)?.requires_approval : null,
      calls: group.length,
      errors,
      error_rate: group.length ? errors / group.length : null,
      runs: new Set(group.map((c) => c.run)).size,
      median_duration_seconds: median(group.map((c) => c.duration)),
      recorded_tool_names: [...new Set(group.map((c) => c.name))].sort(),
    };
  };
  for (const [key, group] of groupBy(calls, (c) => c.key)) {
    const first = group[0] as (typeof calls)[number];
    out.set(key, row(first.id, first.name, group));
  }
  for (const id of tools.live.keys()) if (!out.has(id)) out.set(id, row(id, '', []));
  return out;
}

/** v_runs_awaiting_approval: run id → pending tool name and the pending step's time. */
export function awaitingApproval(runs: readonly TruthRun[]) {
  const out = new Map<string, { tool: string | null; stepAt: Micros | null }>();
  for (const r of runs) {
    if (!r.waiting) continue;
    const pending = (r.detail.approval as { pending: Json | null }).pending;
    const step = (r.detail.steps as Json[]).find((s) => pending && s.id === pending.step_id);
    out.set(r.id, {
      tool: (pending?.tool_name as string | null) ?? null,
      stepAt: step ? micros(step.timestamp) : null,
    });
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
    (r.detail.evaluation_attributes as Json[]).map((e) => ({
      run: r.id,
      attribute: e.attribute_id as string,
      name: e.name as string,
      value: e.value as string,
      recorded: micros(e.recorded_at),
    })),
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
    const numbers = group
      .map((e) => e.value.trim())
      .filter((v) => v !== '' && Number.isFinite(Number(v)))
      .map(Number);
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
      out.set(r.id, {
        match: inForce ? 'as_of_creation' : 'earliest_known',
        updatedAt: v.updatedAt,
        deleted: v.deleted,
      });
    }
  }
  return out;
}
