import { formatTimestamp, MICROS_PER_DAY, type Micros, parseTimestamp } from '../util/timestamp.ts';
import { type CatalogKind, type CatalogSizes, DEFAULT_CATALOG_SIZES, type Json, SimCatalog } from './catalog.ts';
import type { SimClock } from './clock.ts';
import type { GuardrailFilter, RunFilter, ToolFilter } from './query.ts';
import {
  DEFAULT_RUN_OPTIONS,
  isOpenSummary,
  isOpenVersion,
  type RunPlan,
  RunUniverse,
  type RunUniverseOptions,
  type RunVersion,
} from './runs.ts';
import { ToolOptionCounter } from './tool-options.ts';

// The simulator's data: what the API would answer at the clock's current time. Handlers ask it;
// tests and benches read it as ground truth.

export interface WorldOptions {
  seed: number;
  /** Runs created in [initialNow - days, initialNow). */
  size: number;
  days: number;
  initialNow: Micros;
  catalog?: Partial<CatalogSizes>;
  runs?: Partial<Omit<RunUniverseOptions, 'seed' | 'spanStart' | 'initialNow' | 'size'>>;
}

export interface CatalogPosition {
  c: Micros;
  id: string;
}

export interface Page<T, P> {
  items: T[];
  next: P | null;
}

export class SimWorld {
  readonly catalog: SimCatalog;
  readonly runs: RunUniverse;
  private readonly toolOptionCounter: ToolOptionCounter;
  /** Runs deleted upstream: gone from the list, their detail not found, until restored. */
  private readonly deleted = new Set<number>();

  constructor(
    readonly options: WorldOptions,
    readonly clock: SimClock,
  ) {
    const spanStart = options.initialNow - Math.floor(options.days * MICROS_PER_DAY);
    this.catalog = new SimCatalog(options.seed, spanStart, options.initialNow, {
      ...DEFAULT_CATALOG_SIZES,
      ...options.catalog,
    });
    this.runs = new RunUniverse(
      {
        ...DEFAULT_RUN_OPTIONS,
        ...options.runs,
        seed: options.seed,
        spanStart,
        initialNow: options.initialNow,
        size: options.size,
      },
      this.catalog,
    );
    this.toolOptionCounter = new ToolOptionCounter(this.runs);
  }

  now(): Micros {
    return this.clock.now();
  }

  /** The run at `now`, or null when it does not exist (yet). */
  runAt(index: number, now = this.now()): { plan: RunPlan; version: RunVersion } | null {
    if (index < 0 || this.runs.createdAt(index) > now || this.deleted.has(index)) return null;
    const plan = this.runs.plan(index);
    const version = this.runs.versionAt(plan, now);
    return version ? { plan, version } : null;
  }

  /**
   * Settles `count` of the runs open now and created in [createdFrom, createdTo), spread evenly
   * over them; returns their ids. A test's way to change many open runs at one moment.
   */
  settleOpenRuns(count: number, createdFrom: Micros = 0, createdTo: Micros = this.now()): string[] {
    const now = this.now();
    const open: number[] = [];
    const end = this.runs.firstIndexAtOrAfter(Math.min(createdTo, now));
    for (let i = this.runs.firstIndexAtOrAfter(createdFrom); i < end; i++) {
      const at = this.runAt(i, now);
      if (at && at.plan.visibleAt <= now && isOpenVersion(at.version)) open.push(i);
    }
    const picked = new Set<number>();
    for (let k = 0; k < Math.min(count, open.length); k++)
      picked.add(open[Math.floor((k * open.length) / Math.min(count, open.length))] as number);
    const ids: string[] = [];
    for (const i of picked) {
      this.runs.settle(i, now);
      ids.push(this.runs.plan(i).id);
    }
    return ids;
  }

  /** Deletes runs by id (they leave the list, their detail answers not_found); the ids it deleted. */
  deleteRuns(ids: readonly string[]): string[] {
    const out: string[] = [];
    for (const id of ids) {
      const i = this.runs.indexOfId(id.toLowerCase());
      if (i === null || this.runAt(i) === null) continue;
      this.deleted.add(i);
      out.push(id);
    }
    return out;
  }

  /** Brings deleted runs back as they were (their updated_at unchanged); the ids it restored. */
  restoreRuns(ids: readonly string[]): string[] {
    const out: string[] = [];
    for (const id of ids) {
      const i = this.runs.indexOfId(id.toLowerCase());
      if (i !== null && this.deleted.delete(i)) out.push(id);
    }
    return out;
  }

  /** Newest first; `before` is the exclusive upper index from a previous page. */
  listRuns(filter: RunFilter, before: number | null, limit: number): Page<Json, number> {
    const now = this.now();
    let hi = this.runs.firstIndexAtOrAfter(now, true);
    if (filter.createdBefore !== null) hi = Math.min(hi, this.runs.firstIndexAtOrAfter(filter.createdBefore));
    if (before !== null) hi = Math.min(hi, before);
    const lo = filter.createdAfter === null ? 0 : this.runs.firstIndexAtOrAfter(filter.createdAfter);
    const candidates = filter.ticketId ? this.ticketCandidates(filter.ticketId, lo, hi) : null;
    const items: Json[] = [];
    let lastIndex = -1;
    const visit = (i: number): boolean => {
      const run = this.runAt(i, now);
      if (!run || !this.matches(run.plan, run.version, filter)) return true;
      if (items.length === limit) return false; // one more match exists: there is a next page
      items.push(this.runs.summary(run.plan, run.version));
      lastIndex = i;
      return true;
    };
    let more = false;
    if (candidates) {
      for (const i of candidates)
        if (!visit(i)) {
          more = true;
          break;
        }
    } else {
      for (let i = hi - 1; i >= lo; i--)
        if (!visit(i)) {
          more = true;
          break;
        }
    }
    return { items, next: more ? lastIndex : null };
  }

  private ticketCandidates(ticketIds: string[], lo: number, hi: number): number[] {
    const set = new Set<number>();
    for (const t of ticketIds) for (const i of this.runs.indexesOfTicket(t)) if (i >= lo && i < hi) set.add(i);
    return [...set].sort((a, b) => b - a);
  }

  private matches(plan: RunPlan, v: RunVersion, f: RunFilter): boolean {
    if (f.status && (v.status === null || !f.status.includes(v.status))) return false;
    if (f.resolutionType && (!v.resolution || !f.resolutionType.includes(v.resolution.type))) return false;
    // agent_id and search see the agent as the list shows it: a run listed without one matches neither.
    if (f.agentId) {
      const id = this.runs.listedAgent(plan)?.id;
      if (!id || !f.agentId.some((a) => a.toLowerCase() === id)) return false;
    }
    if (f.source && !f.source.includes(plan.source)) return false;
    if (f.ticketId && !f.ticketId.includes(plan.ticketId)) return false;
    const d = v.duration;
    const dr = f.duration;
    if (dr.eq !== undefined && d !== dr.eq) return false;
    if (dr.gt !== undefined && !(d > dr.gt)) return false;
    if (dr.gte !== undefined && !(d >= dr.gte)) return false;
    if (dr.lt !== undefined && !(d < dr.lt)) return false;
    if (dr.lte !== undefined && !(d <= dr.lte)) return false;
    for (const [k, val] of Object.entries(f.metadata)) if (plan.metadata[k] !== val) return false;
    if (f.toolName) {
      const names = this.runs.toolNamesAt(plan, v);
      if (!f.toolName.some((n) => names.has(n))) return false;
    }
    if (f.search !== null) {
      const needle = f.search.toLowerCase();
      const agentName = this.runs.listedAgent(plan)?.name ?? '';
      const hay = [this.runs.ticketTitle(plan), plan.ticketId, agentName];
      if (!hay.some((h) => h.toLowerCase().includes(needle))) return false;
    }
    return true;
  }

  runDetailById(id: string): Json | null {
    const index = this.runs.indexOfId(id.toLowerCase());
    if (index === null) return null;
    const run = this.runAt(index);
    return run ? this.runs.detail(run.plan, run.version) : null;
  }

  /** Every live object of a kind, rendered, newest first (created_at, then id, descending). */
  catalogObjects(kind: CatalogKind): Json[] {
    const now = this.now();
    const out: Json[] = [];
    for (const e of this.catalog.entities[kind]) {
      const state = this.catalog.stateAt(e, now);
      if (state) out.push(this.finish(kind, this.catalog.render(state)));
    }
    return out.sort(compareNewestFirst);
  }

  catalogObject(kind: CatalogKind, id: string): Json | null {
    const entity = this.catalog.find(kind, id);
    if (!entity) return null;
    const state = this.catalog.stateAt(entity, this.now());
    return state ? this.finish(kind, this.catalog.render(state)) : null;
  }

  listCatalog(
    kind: CatalogKind,
    after: CatalogPosition | null,
    limit: number,
    keep: (o: Json) => boolean = () => true,
  ): Page<Json, CatalogPosition> {
    const all = this.catalogObjects(kind).filter(keep);
    const start = after === null ? 0 : all.findIndex((o) => compareNewestFirst(o, positionObject(after)) > 0);
    const rest = start < 0 ? [] : all.slice(start);
    const items = rest.slice(0, limit);
    const last = items[items.length - 1];
    const more = rest.length > limit && last !== undefined;
    return { items, next: more ? { c: createdMicros(last), id: last.id as string } : null };
  }

  static toolMatches(t: Json, f: ToolFilter): boolean {
    if (f.type && !f.type.includes(t.type as string)) return false;
    if (f.isWriteAction !== null && t.is_write_action !== f.isWriteAction) return false;
    if (f.requiresApproval !== null && t.requires_approval !== f.requiresApproval) return false;
    const app = t.app as Json | null;
    const mcp = t.mcp as Json | null;
    if (f.integrationId !== null && app?.integration_id !== f.integrationId) return false;
    if (f.mcpServerId !== null && (mcp?.server_id as string | undefined)?.toLowerCase() !== f.mcpServerId.toLowerCase())
      return false;
    if (f.search !== null) {
      const needle = f.search.toLowerCase();
      const hay = [t.name, t.description, app?.integration_name, mcp?.server_name];
      if (!hay.some((h) => typeof h === 'string' && h.toLowerCase().includes(needle))) return false;
    }
    return true;
  }

  static guardrailMatches(g: Json, f: GuardrailFilter): boolean {
    return f.type === null || g.type === f.type;
  }

  /** Fills in what depends on runs: an agent's `last_run_at`. */
  private finish(kind: CatalogKind, obj: Json): Json {
    if (kind !== 'agent') return obj;
    const now = this.now();
    const top = this.runs.firstIndexAtOrAfter(now, true);
    for (let i = top - 1, seen = 0; i >= 0 && seen < 20_000; i--, seen++) {
      const run = this.runAt(i, now);
      if (run && run.plan.agent?.id === obj.id) {
        obj.last_run_at = formatTimestamp(run.plan.createdAt);
        break;
      }
    }
    return obj;
  }

  /** Recorded tool names of tool-call steps, with their labels and how many visible runs used them. */
  toolOptions(): Json[] {
    const counts = this.toolOptionCounter.countsAt(this.now());
    return this.runs.toolPool
      .filter((t) => counts.has(t.name))
      .map((t) => ({ tool_name: t.name, display_name: t.label, run_count: counts.get(t.name) ?? 0 }))
      .sort((a, b) => b.run_count - a.run_count || (a.tool_name < b.tool_name ? -1 : 1));
  }

  /** Ground truth: every run visible now, oldest first. */
  *visibleRuns(
    from: Micros | null = null,
    to: Micros | null = null,
  ): Generator<{ plan: RunPlan; version: RunVersion }> {
    const now = this.now();
    let hi = this.runs.firstIndexAtOrAfter(now, true);
    if (to !== null) hi = Math.min(hi, this.runs.firstIndexAtOrAfter(to));
    const lo = from === null ? 0 : this.runs.firstIndexAtOrAfter(from);
    for (let i = lo; i < hi; i++) {
      const run = this.runAt(i, now);
      if (run) yield run;
    }
  }

  /** Ground truth: the detail of every visible run, oldest first. */
  *truthRunDetails(): Generator<Json> {
    for (const { plan, version } of this.visibleRuns()) yield this.runs.detail(plan, version);
  }

  isOpen(summary: Json): boolean {
    return isOpenSummary(summary);
  }
}

function createdMicros(o: Json): Micros {
  return parseTimestamp(o.created_at as string) as Micros;
}

function positionObject(p: CatalogPosition): Json {
  return { created_at: formatTimestamp(p.c), id: p.id };
}

function compareNewestFirst(a: Json, b: Json): number {
  const ca = createdMicros(a);
  const cb = createdMicros(b);
  if (ca !== cb) return cb - ca;
  const ia = a.id as string;
  const ib = b.id as string;
  return ia === ib ? 0 : ia < ib ? 1 : -1;
}
