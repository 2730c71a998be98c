import { formatTimestamp, MICROS_PER_MINUTE, MICROS_PER_SECOND, type Micros } from '../util/timestamp.ts';
import type { CatalogEntity, Json, SimCatalog } from './catalog.ts';
import { type Contact, contactLine, contactOf, customerRecord } from './contacts.ts';
import { hostileDetail, hostileTitle, isHostile } from './hostile.ts';
import { drawLifecycle } from './lifecycle.ts';
import { hashKeys, indexedUuid, indexOfUuid, type Rng, rngFor } from './random.ts';
import { deepJson, jsonValue, paragraph, personName, sentence, title } from './text.ts';

// Runs form an endless sequence: run i is created at a time that grows with i, so a created-time
// range maps to an index range by binary search, and the clock reveals runs as it passes them.
// Each run has a lifecycle of versions (running, paused, waiting for approval, settled, corrected
// later); its state at clock time T is its last version at or before T.

export interface RunUniverseOptions {
  seed: number;
  /** created_at of the first run. */
  spanStart: Micros;
  /** The clock's initial time: `size` runs are created in [spanStart, initialNow). */
  initialNow: Micros;
  size: number;
  /** Share of runs that appear in the list some time after their created_at. */
  lateFraction: number;
  /** The longest such delay. */
  lateMaxMicros: Micros;
  /** Share of settled runs that change once more later (evaluation recorded, resolution corrected). */
  postSettleFraction: number;
  /** Share of tool calls whose output is large (about `largeOutputBytes`). */
  largeOutputFraction: number;
  largeOutputBytes: number;
  /** Share of runs whose payloads are hostile (hostile.ts): odd text, every JSON type, huge runs. */
  hostileFraction: number;
}

export interface RunVersion {
  at: Micros;
  status: string | null;
  resolution: { type: string; summary: string } | null;
  waiting: boolean;
  /** Step ordinal awaiting approval, while waiting. */
  pendingStep: number | null;
  scheduledResumeAt: Micros | null;
  steps: number;
  messages: number;
  evals: number;
  /** A step removed from this version on (superseded upstream). */
  droppedStep: number | null;
  duration: number;
}

export interface StepSkeleton {
  type: string;
  /** Index into the tool pool when `type` is `tool_call`. */
  tool: number | null;
}

export interface RunPlan {
  index: number;
  id: string;
  createdAt: Micros;
  visibleAt: Micros;
  ticketNo: number;
  ticketId: string;
  /** The run's agent; a run detail always names one. */
  agent: CatalogEntity;
  /** The list shows no agent for this run (the summary's agent is null). */
  agentHidden: boolean;
  categoryIdx: number | null;
  source: string;
  metadata: Record<string, string>;
  versions: RunVersion[];
  steps: StepSkeleton[];
}

export interface PoolTool {
  name: string;
  label: string;
  type: string;
  id: string | null;
  requiresApproval: boolean;
}

const STEP_TYPES = [
  'reasoning',
  'message',
  'knowledge_search',
  'classification',
  'handoff',
  'guardrail_check',
  'plan',
  'note',
];
const SOURCES = [
  'email',
  'chat',
  'api',
  'zendesk',
  'intercom',
  'slack',
  'web_widget',
  'phone',
  'messenger:whatsapp',
  'フォーム',
];
const ROLES = ['customer', 'ai_agent', 'human_agent', 'system', 'internal_note'];
const TAGS = [
  'vip',
  'refund',
  'shipping',
  'billing',
  'urgent',
  'de',
  'fr',
  'ja',
  'bug',
  'feature_request',
  'müll',
  '返品',
  'churn-risk',
];

export class RunUniverse {
  private readonly interval: number;
  readonly toolPool: PoolTool[];
  private readonly planCache = new Map<number, RunPlan>();
  /** Runs told to settle at a time of a test's choosing: their lifecycle ends there. */
  private readonly settledAt = new Map<number, RunVersion>();
  /**
   * When the API grew: versions of runs from this time on carry members the spec does not list
   * (cost_usd on a run, latency_ms on a step, an array of citations), as an API that gains
   * fields would send them. Null: the spec's members only.
   */
  grownSince: Micros | null = null;
  /**
   * When a member the API grew changed type: versions from this time on carry cost_usd as text
   * ("0.01234 USD") where it was a number. Null: it stays a number.
   */
  retypedSince: Micros | null = null;

  constructor(
    readonly opts: RunUniverseOptions,
    private readonly catalog: SimCatalog,
  ) {
    this.interval = (opts.initialNow - opts.spanStart) / Math.max(1, opts.size);
    // Tools the runs call: the catalog's initial tools plus a few recorded names the catalog no
    // longer has (deleted tools still appear in old runs).
    this.toolPool = catalog.tools.map((t) => ({
      name: t.name,
      label: t.label,
      type: t.type,
      id: t.id,
      requiresApproval: t.index % 3 === 0,
    }));
    for (const name of ['legacy_lookup', 'old_refund_v1', 'zendesk_macro_apply']) {
      this.toolPool.push({ name, label: name.replace(/_/g, ' '), type: 'app_tool', id: null, requiresApproval: false });
    }
  }

  createdAt(i: number): Micros {
    // A few runs share their predecessor's created_at exactly, to break clients that use
    // created_at as a strict cursor.
    while (i > 0 && (hashKeys(this.opts.seed, ['tie', i]) & 0xff) < 5) i--;
    const u = hashKeys(this.opts.seed, ['created', i]) / 0x100000000;
    return this.opts.spanStart + Math.floor((i + u) * this.interval);
  }

  visibleAt(i: number): Micros {
    const h = hashKeys(this.opts.seed, ['late', i]) / 0x100000000;
    if (h >= this.opts.lateFraction) return this.createdAt(i);
    const d = hashKeys(this.opts.seed, ['late-delay', i]) / 0x100000000;
    return this.createdAt(i) + Math.floor(MICROS_PER_SECOND * 30 + d * this.opts.lateMaxMicros);
  }

  /** The first index whose created_at is >= t (or > t when `strict`). */
  firstIndexAtOrAfter(t: Micros, strict = false): number {
    if (t <= this.opts.spanStart) return 0;
    let lo = 0;
    let hi = Math.max(1, Math.ceil((t - this.opts.spanStart) / this.interval) + 2);
    while (strict ? this.createdAt(hi) <= t : this.createdAt(hi) < t) hi *= 2;
    while (lo < hi) {
      const mid = Math.floor((lo + hi) / 2);
      const c = this.createdAt(mid);
      if (strict ? c <= t : c < t) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  indexOfId(id: string): number | null {
    return indexOfUuid(this.opts.seed, 'run', id);
  }

  ticketIdOf(ticketNo: number): string {
    const n = 100000 + ticketNo;
    const f = hashKeys(this.opts.seed, ['ticket-format', ticketNo]) % 100;
    if (f < 70) return String(n);
    if (f < 85) return `conv_${n}`;
    if (f < 93) return `ext/${['eu', 'us', 'apac'][n % 3]}/${n}`;
    if (f < 96) return `T'${n}"`;
    if (f < 98) return `チケット-${n}`;
    return `%..${n}`;
  }

  /** Runs on a ticket: the ticket's first run and the follow-ups right after it. */
  indexesOfTicket(ticketId: string): number[] {
    const m = /(\d+)\D*$/.exec(ticketId);
    if (!m) return [];
    const ticketNo = Number(m[1]) - 100000;
    if (!Number.isSafeInteger(ticketNo) || ticketNo < 0 || this.ticketIdOf(ticketNo) !== ticketId) return [];
    const out: number[] = [];
    if (this.isFollowUp(ticketNo)) return out;
    out.push(ticketNo);
    for (let j = ticketNo + 1; this.isFollowUp(j); j++) out.push(j);
    return out;
  }

  private isFollowUp(i: number): boolean {
    return i > 0 && (hashKeys(this.opts.seed, ['follow', i]) & 0xff) < 20;
  }

  private ticketNoOf(i: number): number {
    while (this.isFollowUp(i)) i--;
    return i;
  }

  /** Run i's plan; `cache: false` for scans over many runs, which would only churn the cache. */
  plan(i: number, cache = true): RunPlan {
    const cached = this.planCache.get(i);
    if (cached) return cached;
    const p = this.makePlan(i);
    if (!cache) return p;
    if (this.planCache.size > 50_000) this.planCache.clear();
    this.planCache.set(i, p);
    return p;
  }

  private makePlan(i: number): RunPlan {
    const seed = this.opts.seed;
    const rng = rngFor(seed, 'run', i);
    const createdAt = this.createdAt(i);
    const ticketNo = this.ticketNoOf(i);
    const alive = this.catalog.agentsAliveAt(createdAt);
    const agents = alive.length > 0 ? alive : this.catalog.entities.agent;
    // A detail's agent is an object (the spec gives it no null), so a run the list shows without an
    // agent still has one; its own generator keeps the other runs' draws unchanged.
    const agentHidden = rng.chance(0.01) || alive.length === 0;
    const agent = (agentHidden ? rngFor(seed, 'run-agent', i).pick(agents) : rng.pick(agents)) as CatalogEntity;
    const categoryIdx = rng.chance(0.06) ? null : rng.int(0, this.catalog.categories.length - 1);
    const metadata: Record<string, string> = {
      plan: rng.weighted([
        ['free', 5],
        ['pro', 3],
        ['enterprise', 1],
      ]),
      region: rng.pick(['eu', 'us', 'apac']),
      'brand.id': `b-${rng.int(1, 5)}`,
      'channel:type': rng.pick(['web', 'mobile', 'email']),
    };
    if (rng.chance(0.1)) metadata.vip = 'true';
    const stepCount = rng.int(2, 60);
    const steps: StepSkeleton[] = [];
    for (let j = 0; j < stepCount; j++) {
      const s = rngFor(seed, 'step-skel', i, j);
      if (s.chance(0.5)) {
        const r = s.next();
        steps.push({ type: 'tool_call', tool: Math.floor(r * r * this.toolPool.length) });
      } else {
        steps.push({ type: s.pick(STEP_TYPES), tool: null });
      }
    }
    const versions = this.lifecycle(rng, createdAt, steps);
    const settled = this.settledAt.get(i);
    if (settled) {
      const kept = versions.filter((v) => v.at < settled.at);
      versions.splice(0, versions.length, ...(kept.length ? kept : versions.slice(0, 1)), settled);
    }
    return {
      index: i,
      id: indexedUuid(seed, 'run', i),
      createdAt,
      visibleAt: this.visibleAt(i),
      ticketNo,
      ticketId: this.ticketIdOf(ticketNo),
      agent,
      agentHidden,
      categoryIdx,
      source: rng.pick(SOURCES),
      metadata,
      versions,
      steps,
    };
  }

  private lifecycle(rng: Rng, c: Micros, steps: StepSkeleton[]): RunVersion[] {
    return drawLifecycle(rng, c, steps, { toolPool: this.toolPool, postSettleFraction: this.opts.postSettleFraction });
  }

  /**
   * Ends run `i`'s lifecycle at `at` (after its current version): completed and resolved, every
   * step, a message more and an evaluation more. What it would have done afterwards never happens.
   */
  settle(i: number, at: Micros): void {
    const plan = this.makePlan(i);
    const cur = this.versionAt(plan, at) ?? (plan.versions[0] as RunVersion);
    this.settledAt.set(i, {
      ...cur,
      at: Math.max(at, cur.at + 1),
      status: 'completed',
      resolution: { type: 'resolved', summary: 'Settled on request.' },
      waiting: false,
      pendingStep: null,
      scheduledResumeAt: null,
      steps: plan.steps.length,
      messages: cur.messages + 1,
      evals: cur.evals + 1,
      duration: Math.round((at - plan.createdAt) / MICROS_PER_SECOND),
    });
    this.planCache.delete(i);
  }

  /** The run's version at `now`, or null when it is not yet visible. */
  versionAt(plan: RunPlan, now: Micros): RunVersion | null {
    if (plan.visibleAt > now) return null;
    let cur: RunVersion | null = null;
    for (const v of plan.versions) {
      if (v.at > now) break;
      cur = v;
    }
    return cur ?? (plan.versions[0] as RunVersion);
  }

  /** Visible steps of a version, as indexes into `plan.steps`. */
  visibleSteps(plan: RunPlan, v: RunVersion): number[] {
    const out: number[] = [];
    const n = Math.min(v.steps, plan.steps.length);
    for (let j = 0; j < n; j++) if (j !== v.droppedStep) out.push(j);
    return out;
  }

  toolNamesAt(plan: RunPlan, v: RunVersion): Set<string> {
    const names = new Set<string>();
    for (const j of this.visibleSteps(plan, v)) {
      const s = plan.steps[j] as StepSkeleton;
      if (s.type === 'tool_call' && s.tool !== null) names.add((this.toolPool[s.tool] as PoolTool).name);
    }
    return names;
  }

  /** The customer of the run's ticket: the name, email and phone its conversation gives away. */
  contact(plan: RunPlan): Contact {
    return contactOf(this.opts.seed, plan.ticketNo);
  }

  ticketTitle(plan: RunPlan): string {
    const titled = title(rngFor(this.opts.seed, 'ticket-title', plan.ticketNo));
    const withEmail = rngFor(this.opts.seed, 'ticket-title-email', plan.ticketNo).chance(0.1);
    const plain = withEmail ? `${titled} (${this.contact(plan).email})` : titled;
    return this.hostile(plan) ? hostileTitle(this.opts.seed, plan.index, plain) : plain;
  }

  private hostile(plan: RunPlan): boolean {
    return isHostile(this.opts.seed, plan.index, this.opts.hostileFraction);
  }

  agentSnapshot(plan: RunPlan): { id: string; name: string; description: string } {
    const state = this.catalog.stateAt(plan.agent, plan.createdAt) ?? {
      entity: plan.agent,
      version: 0,
      updatedAt: plan.createdAt,
    };
    const rendered = this.catalog.render(state);
    return { id: plan.agent.id, name: rendered.name as string, description: rendered.description as string };
  }

  /** The agent as the runs list shows it: null, or with a null id or name, now and then. */
  listedAgent(plan: RunPlan): { id: string | null; name: string | null } | null {
    if (plan.agentHidden) return null;
    const rng = rngFor(this.opts.seed, 'run-summary', plan.index);
    const agent = this.agentSnapshot(plan);
    const nameNull = rng.chance(0.02);
    const idNull = rngFor(this.opts.seed, 'run-agent-id', plan.index).chance(0.01);
    return { id: idNull ? null : agent.id, name: nameNull ? null : agent.name };
  }

  summary(plan: RunPlan, v: RunVersion): Json {
    const rng = rngFor(this.opts.seed, 'run-summary', plan.index);
    if (!plan.agentHidden) rng.next(); // the draw listedAgent made for the name
    const category = plan.categoryIdx === null ? null : (this.catalog.categories[plan.categoryIdx] ?? null);
    const messaging = plan.ticketId.startsWith('conv_');
    const categoryIdNull = category !== null && rng.chance(0.05);
    const categoryNameNull = rngFor(this.opts.seed, 'run-category-name', plan.index).chance(0.03);
    return {
      id: plan.id,
      object: 'run',
      created_at: formatTimestamp(plan.createdAt),
      updated_at: formatTimestamp(v.at),
      status: v.status,
      source: plan.source,
      duration_seconds: v.duration,
      ticket: {
        id: plan.ticketId,
        title: this.ticketTitle(plan),
        url: messaging ? null : `https://support.example.com/tickets/${encodeURIComponent(plan.ticketId)}`,
      },
      agent: this.listedAgent(plan),
      category: category
        ? { id: categoryIdNull ? null : category.id, name: categoryNameNull ? null : category.name }
        : null,
      resolution: v.resolution,
      trigger: this.trigger(plan, false),
      approval: {
        waiting_for_approval: v.waiting,
        pending: v.waiting && v.pendingStep !== null ? this.pendingApproval(plan, v.pendingStep) : null,
      },
      scheduled_resume_at: v.scheduledResumeAt === null ? null : formatTimestamp(v.scheduledResumeAt),
    };
  }

  private trigger(plan: RunPlan, detail: boolean): Json {
    const rng = rngFor(this.opts.seed, 'trigger', plan.index);
    const out: Json = {};
    const put = (key: string, value: () => unknown) => {
      const r = rng.next();
      if (r < 0.8) out[key] = value();
      else if (r < 0.9) out[key] = null;
    };
    put('event_type', () => rng.pick(['ticket.created', 'ticket.updated', 'message.received', 'manual', 'schedule']));
    put('source', () => plan.source);
    put('timestamp', () => formatTimestamp(plan.createdAt - rng.int(0, 5 * MICROS_PER_SECOND)));
    put('ticket_status', () => rng.pick(['new', 'open', 'pending', 'solved', 'hold']));
    put('ticket_priority', () => rng.pick(['low', 'normal', 'high', 'urgent']));
    put('ticket_tags', () => Array.from({ length: rng.int(0, 5) }, () => rng.pick(TAGS)));
    put('trigger_message_type', () => rng.pick(['public', 'private', 'email', 'chat']));
    put('internal_notes_only', () => rng.chance(0.1));
    put('is_messaging_ticket', () => plan.ticketId.startsWith('conv_'));
    // The draw is made as before, so the draws after it stay as they were.
    put('customer_name', () => {
      personName(rng);
      return this.contact(plan).name;
    });
    if (detail) {
      const line = contactLine(rngFor(this.opts.seed, 'trigger-contact', plan.index), this.contact(plan));
      put('message_text', () => paragraph(rng, 1, 3) + line);
      put('latest_comment', () => paragraph(rng, 1, 2));
    }
    return out;
  }

  private pendingApproval(plan: RunPlan, step: number): Json {
    const skel = plan.steps[step] as StepSkeleton;
    const tool = this.toolPool[skel.tool ?? 0] as PoolTool;
    const rng = rngFor(this.opts.seed, 'pending', plan.index);
    const redacted = rng.chance(0.3);
    let params: unknown = redacted
      ? { customer_email: '[REDACTED]', amount: rng.int(1, 500) }
      : { order_id: `ord_${rng.hex(8)}`, amount: rng.int(1, 500), email: this.contact(plan).email };
    // Every member the spec makes nullable is null now and then; params are sometimes cut short.
    const n = rngFor(this.opts.seed, 'pending-nulls', plan.index);
    const truncated = n.chance(0.1);
    if (truncated) params = { partial: `${JSON.stringify(params).slice(0, 24)}…` };
    return {
      step_id: n.chance(0.03) ? null : this.stepId(plan, step),
      tool_id: n.chance(0.1) ? null : tool.id,
      tool_name: n.chance(0.03) ? null : tool.name,
      tool_type: n.chance(0.05) ? null : tool.type,
      params: n.chance(0.08) ? null : params,
      redacted,
      truncated,
    };
  }

  private stepId(plan: RunPlan, j: number): string {
    return rngFor(this.opts.seed, 'step-id', plan.index, j).uuid();
  }

  detail(plan: RunPlan, v: RunVersion): Json {
    const base = this.summary(plan, v);
    const agent = this.agentSnapshot(plan);
    const seed = this.opts.seed;
    const vIndex = plan.versions.indexOf(v);
    // When a step, message or evaluation first appeared: spread between the versions.
    const timeOf = (count: (x: RunVersion) => number, k: number): Micros => {
      let prevAt = plan.createdAt;
      let prevCount = 0;
      for (let n = 0; n <= vIndex; n++) {
        const ver = plan.versions[n] as RunVersion;
        const c = count(ver);
        if (k < c) {
          const frac = (k - prevCount + 1) / (c - prevCount + 1);
          return prevAt + Math.floor((ver.at - prevAt) * frac);
        }
        prevAt = ver.at;
        prevCount = Math.max(prevCount, c);
      }
      return v.at;
    };

    const conversation: Json[] = [];
    const customer = this.contact(plan);
    for (let k = 0; k < v.messages; k++) {
      const r = rngFor(seed, 'message', plan.index, k);
      const role = k === 0 ? 'customer' : r.weighted(ROLES.map((x, n) => [x, n < 2 ? 4 : 1] as const));
      const at = timeOf((x) => x.messages, k);
      const someone = personName(r);
      const gives = role === 'customer' ? contactLine(rngFor(seed, 'message-contact', plan.index, k), customer) : '';
      conversation.push({
        id: r.uuid(),
        order: k + 1,
        role,
        user_name: role === 'ai_agent' ? (agent?.name ?? 'Assistant') : role === 'customer' ? customer.name : someone,
        message: paragraph(r, 1, 4) + gives,
        source_timestamp: r.weighted([
          [formatTimestamp(at - 1000 * r.int(0, 9999)), 6],
          [String(Math.floor(at / MICROS_PER_SECOND)), 2],
          ['', 1],
        ]),
        recorded_at: formatTimestamp(at),
      });
    }

    const steps: Json[] = [];
    for (const j of this.visibleSteps(plan, v))
      steps.push(
        this.step(
          plan,
          v,
          j,
          timeOf((x) => x.steps, j),
        ),
      );

    const evaluation_attributes: Json[] = [];
    for (let k = 0; k < v.evals; k++) {
      const r = rngFor(seed, 'eval', plan.index, k);
      const attr = this.catalog.attributes[k % this.catalog.attributes.length] as {
        id: string;
        name: string;
        description: string;
      };
      evaluation_attributes.push({
        id: r.uuid(),
        attribute_id: attr.id,
        name: attr.name,
        description: attr.description,
        value: r.pick([
          '1',
          '2',
          '3',
          '4',
          '5',
          'positive',
          'neutral',
          'negative',
          'true',
          'false',
          'en',
          'fr',
          'ja',
          'refund_request',
          '',
        ]),
        recorded_at: formatTimestamp(timeOf((x) => x.evals, k)),
      });
    }
    const detail: Json = {
      ...base,
      agent,
      trigger: this.trigger(plan, true),
      conversation,
      steps,
      evaluation_attributes,
    };
    const odd = this.hostile(plan) ? hostileDetail(this.opts.seed, plan.index, detail) : detail;
    return this.grownSince !== null && v.at >= this.grownSince ? this.grown(plan, odd, v.at) : odd;
  }

  private grown(plan: RunPlan, detail: Json, at: Micros): Json {
    const r = rngFor(this.opts.seed, 'grown', plan.index, 0);
    const steps = (detail.steps as Json[]).map((s, j) => ({
      ...s,
      latency_ms: 20 + ((plan.index * 7 + j * 13) % 900),
    }));
    const citations = Array.from({ length: r.int(0, 3) }, (_, k) => ({
      url: `https://help.example.com/articles/${plan.index * 10 + k}`,
      title: title(r),
      score: Math.round(r.logUniform(0.01, 1) * 1000) / 1000,
    }));
    const cost = Math.round((detail.duration_seconds as number) * 130) / 100_000;
    const retyped = this.retypedSince !== null && at >= this.retypedSince;
    return { ...detail, cost_usd: retyped ? `${cost} USD` : cost, steps, citations };
  }

  private step(plan: RunPlan, v: RunVersion, j: number, at: Micros): Json {
    const skel = plan.steps[j] as StepSkeleton;
    const r = rngFor(this.opts.seed, 'step', plan.index, j);
    const pendingHere = v.waiting && v.pendingStep === j;
    const base: Json = {
      id: this.stepId(plan, j),
      order: j + 1,
      timestamp: formatTimestamp(at),
      type: skel.type,
      title: title(r),
      content: r.chance(0.3) ? paragraph(r, 1, 3) : sentence(r),
      status: 'completed',
      duration_seconds: Math.round(r.logUniform(0.01, 30) * 1000) / 1000,
      tool: null,
    };
    if (skel.type !== 'tool_call' || skel.tool === null) {
      base.status = r.chance(0.05) ? 'skipped' : 'completed';
      base.tool = this.nonCallTool(r, skel.type);
      return base;
    }
    const tool = this.toolPool[skel.tool] as PoolTool;
    const failed = !pendingHere && r.chance(0.08);
    const redacted = r.chance(0.15);
    const truncated = r.chance(0.07);
    let output: unknown = pendingHere ? null : jsonValue(r, r.chance(0.2) ? 3 : 2);
    if (!pendingHere && r.chance(this.opts.largeOutputFraction)) {
      output = { body: largeText(r, this.opts.largeOutputBytes), truncated_at: this.opts.largeOutputBytes };
    } else if (!pendingHere && r.chance(0.005)) {
      output = deepJson(64);
    }
    if (truncated && typeof output === 'object' && output !== null)
      output = { partial: `${JSON.stringify(output).slice(0, 200)}…` };
    // A lookup of the customer: the call names them and the answer echoes their record.
    const lookup = rngFor(this.opts.seed, 'step-contact', plan.index, j);
    if (!pendingHere && !truncated && lookup.chance(0.25)) output = customerRecord(lookup, this.contact(plan));
    const input: Json = { query: sentence(r, 2, 8), limit: r.int(1, 50) };
    if (lookup.chance(0.2)) input.email = this.contact(plan).email;
    if (redacted) {
      input.customer_email = '[REDACTED]';
      input.card_number = '[REDACTED]';
    }
    base.status = pendingHere ? 'waiting_for_approval' : failed ? 'failed' : 'completed';
    base.tool = {
      name: tool.name,
      type: tool.type,
      input,
      output: failed ? null : output,
      redacted,
      truncated,
      error: failed
        ? r.pick(['timeout after 30s', 'HTTP 502 from upstream', 'invalid parameter: «id»', 'rate limited by Shopify'])
        : '',
    };
    return base;
  }

  /**
   * The spec gives every step a `tool` object, tool call or not. Most other steps carry an empty
   * one; knowledge searches name the search tool they used, so a client that counts tool calls by
   * `tool.name` rather than by step `type` counts too many.
   */
  private nonCallTool(r: Rng, type: string): Json {
    if (type === 'knowledge_search') {
      return {
        name: 'knowledge_search',
        type: 'service_tool',
        input: { query: sentence(r, 2, 6) },
        output: { hits: r.int(0, 8) },
        redacted: false,
        truncated: false,
        error: '',
      };
    }
    return { name: '', type: '', input: null, output: null, redacted: false, truncated: false, error: '' };
  }
}

function largeText(rng: Rng, bytes: number): string {
  // A paragraph repeated to size: large like a real API dump, cheap to generate.
  const unit = `${paragraph(rng, 4, 8)} `;
  return unit.repeat(Math.max(1, Math.ceil(bytes / Buffer.byteLength(unit)))).slice(0, bytes);
}

/** Whether a version keeps its run open (the rule runsync's sync/open-runs.ts applies to summaries). */
export function isOpenVersion(v: RunVersion): boolean {
  return (
    v.status === 'running' ||
    v.status === 'paused' ||
    v.waiting ||
    v.scheduledResumeAt !== null ||
    v.resolution?.type === 'pending'
  );
}

export function isOpenSummary(run: Json): boolean {
  const status = run.status;
  const approval = run.approval as Json | null;
  const resolution = run.resolution as Json | null;
  return (
    status === 'running' ||
    status === 'paused' ||
    approval?.waiting_for_approval === true ||
    run.scheduled_resume_at != null ||
    resolution?.type === 'pending'
  );
}

export const DEFAULT_RUN_OPTIONS = {
  lateFraction: 0.03,
  lateMaxMicros: 10 * MICROS_PER_MINUTE,
  postSettleFraction: 0.05,
  largeOutputFraction: 0.001,
  largeOutputBytes: 64 * 1024,
  hostileFraction: 0,
} as const;
