import { formatTimestamp, MICROS_PER_DAY, MICROS_PER_HOUR, type Micros } from '../util/timestamp.ts';
import { type Rng, rngFor } from './random.ts';
import { deepJson, jsonValue, paragraph, sentence, slug, title } from './text.ts';

// The catalog (tools, agents, guidelines, guardrails, runbooks) is small, so it is generated whole
// at start-up. Each object carries a timeline of events after the simulator's start (edits,
// unpublishing, deletion); its state at any clock time is the fold of the events up to then.

export type CatalogKind = 'tool' | 'agent' | 'guideline' | 'guardrail' | 'runbook';
export type Json = Record<string, unknown>;

interface CatalogEvent {
  at: Micros;
  type: 'edit' | 'unpublish' | 'publish' | 'delete';
}

export interface CatalogEntity {
  kind: CatalogKind;
  index: number;
  id: string;
  createdAt: Micros;
  firstUpdatedAt: Micros;
  events: CatalogEvent[];
}

export interface CatalogState {
  entity: CatalogEntity;
  version: number;
  updatedAt: Micros;
}

export interface CatalogSizes {
  tools: number;
  agents: number;
  guidelines: number;
  guardrails: number;
  runbooks: number;
}

export const DEFAULT_CATALOG_SIZES: CatalogSizes = {
  tools: 140,
  agents: 12,
  guidelines: 45,
  guardrails: 16,
  runbooks: 28,
};

/** Mean days between events, per kind, after the simulator's start. */
const EVENT_RATE_DAYS: Record<CatalogKind, { edit: number; unpublish: number; delete: number }> = {
  tool: { edit: 20, unpublish: Infinity, delete: 400 },
  agent: { edit: 8, unpublish: Infinity, delete: 600 },
  guideline: { edit: 12, unpublish: 60, delete: 500 },
  guardrail: { edit: 15, unpublish: Infinity, delete: 300 },
  runbook: { edit: 10, unpublish: 45, delete: 300 },
};

const EVENT_HORIZON_DAYS = 400;

export const TOOL_TYPES = ['service_tool', 'app_tool', 'custom_tool', 'mcp_tool'] as const;

export interface ToolIdentity {
  index: number;
  id: string;
  type: (typeof TOOL_TYPES)[number];
  name: string;
  label: string;
}

const SERVICE_IDS = [
  'knowledge_search',
  'web_search',
  'translate',
  'sentiment',
  'summarize',
  'handoff',
  'calculator',
  'knowledge/search.v2',
  'discount%calc',
  'übersetzung',
  'date time',
  'order.lookup',
];
const INTEGRATIONS = [
  ['zendesk', 'Zendesk'],
  ['shopify', 'Shopify'],
  ['salesforce', 'Salesforce'],
  ['stripe', 'Stripe'],
  ['jira', 'Jira'],
  ['slack', 'Slack'],
  ['hubspot', 'HubSpot'],
  ['gorgias', 'Gorgias'],
] as const;
const VERBS = ['get', 'update', 'create', 'search', 'cancel', 'refund', 'list', 'close', 'tag', 'notify'];
const NOUNS = ['ticket', 'order', 'customer', 'invoice', 'subscription', 'shipment', 'user', 'issue'];
const MCP_SERVERS = ['inventory-mcp', 'crm-mcp', 'docs-mcp', 'billing-mcp'];

export class SimCatalog {
  readonly entities: Record<CatalogKind, CatalogEntity[]>;
  readonly tools: ToolIdentity[];
  readonly categories: { id: string; name: string }[];
  readonly attributes: { id: string; name: string; description: string }[];
  readonly mcpServers: { id: string; name: string }[];
  private readonly byId = new Map<string, CatalogEntity>();

  constructor(
    private readonly seed: number,
    private readonly start: Micros,
    private readonly end: Micros,
    sizes: CatalogSizes,
  ) {
    this.mcpServers = MCP_SERVERS.map((name, i) => ({ id: rngFor(seed, 'mcp-server', i).uuid(), name }));
    this.tools = this.toolIdentities(sizes.tools);
    this.entities = {
      tool: this.makeEntities('tool', sizes.tools, (i) => this.tools[i]?.id as string),
      agent: this.makeEntities('agent', sizes.agents),
      guideline: this.makeEntities('guideline', sizes.guidelines),
      guardrail: this.makeEntities('guardrail', sizes.guardrails),
      runbook: this.makeEntities('runbook', sizes.runbooks),
    };
    for (const list of Object.values(this.entities)) for (const e of list) this.byId.set(`${e.kind}/${e.id}`, e);
    const catNames = [
      'Billing',
      'Shipping',
      'Returns & exchanges',
      'Account access',
      'Technical issue',
      'Feedback',
      'Réclamations',
      '配送の問題',
      'Доставка',
      'Pedidos 📦',
    ];
    this.categories = catNames.map((name, i) => ({ id: rngFor(seed, 'category', i).uuid(), name }));
    const attrs = [
      ['CSAT prediction', 'Predicted customer satisfaction, 1 to 5'],
      ['Tone', 'Tone of the customer’s first message'],
      ['Policy adherence', 'Whether the agent followed every guideline'],
      ['Language', 'Detected language of the conversation'],
      ['Intent', 'Primary customer intent'],
      ['Escalation reason', 'Why a human was needed, if one was'],
    ] as const;
    this.attributes = attrs.map(([name, description], i) => ({
      id: rngFor(seed, 'attribute', i).uuid(),
      name,
      description,
    }));
  }

  private toolIdentities(count: number): ToolIdentity[] {
    const out: ToolIdentity[] = [];
    const usedNames = new Set<string>();
    for (let i = 0; i < count; i++) {
      const rng = rngFor(this.seed, 'tool-identity', i);
      const type = TOOL_TYPES[i % 4] as ToolIdentity['type'];
      let id: string;
      let name: string;
      if (type === 'service_tool') {
        const base = SERVICE_IDS[Math.floor(i / 4) % SERVICE_IDS.length] as string;
        const suffix = i < SERVICE_IDS.length * 4 ? '' : `_${i}`;
        id = `service:${base}${suffix}`;
        name = `${base.replace(/[^\p{L}\p{N}]+/gu, '_')}${suffix}`;
      } else if (type === 'app_tool') {
        const [integ] = rng.pick(INTEGRATIONS);
        const verb = rng.pick(VERBS);
        const noun = rng.pick(NOUNS);
        id = `app:${integ}.${verb}_${noun}.${i}`;
        name = `${integ}_${verb}_${noun}`;
      } else {
        id = `${type === 'custom_tool' ? 'custom' : 'mcp'}:${rng.uuid()}`;
        name = type === 'custom_tool' ? `custom_${slug(rng, 2)}` : `${slug(rng, 1)}_${rng.pick(VERBS)}`;
      }
      while (usedNames.has(name)) name = `${name}_${i}`;
      usedNames.add(name);
      const label = name
        .split(/[_.]/)
        .filter(Boolean)
        .map((w, k) => (k === 0 ? w.charAt(0).toUpperCase() + w.slice(1) : w))
        .join(' ');
      out.push({ index: i, id, type, name, label });
    }
    return out;
  }

  private makeEntities(kind: CatalogKind, count: number, idOf?: (i: number) => string): CatalogEntity[] {
    const out: CatalogEntity[] = [];
    // About one object in ten is created after the start, so new objects appear as the clock moves.
    const total = count + Math.ceil(count / 10);
    for (let i = 0; i < total; i++) {
      const rng = rngFor(this.seed, kind, 'entity', i);
      const id = idOf && i < count ? idOf(i) : this.entityId(kind, i, rng);
      const future = i >= count;
      const createdAt = future
        ? this.end + Math.floor(rng.next() * 60 * MICROS_PER_DAY)
        : this.start - Math.floor(rng.logUniform(1, 400) * MICROS_PER_DAY) + rng.int(0, 999_999);
      const firstUpdatedAt = future ? createdAt : createdAt + Math.floor(rng.next() * (this.end - createdAt) * 0.9);
      const events: CatalogEvent[] = [];
      const rates = EVENT_RATE_DAYS[kind];
      let t = Math.max(this.end, createdAt);
      let published = true;
      const horizon = this.end + EVENT_HORIZON_DAYS * MICROS_PER_DAY;
      while (t < horizon) {
        const editGap = exp(rng, rates.edit);
        const pubGap = exp(rng, published ? rates.unpublish : 3);
        const delGap = exp(rng, rates.delete);
        const gap = Math.min(editGap, pubGap, delGap);
        t += Math.max(MICROS_PER_HOUR / 60, Math.floor(gap * MICROS_PER_DAY)) + rng.int(0, 999_999);
        if (t >= horizon) break;
        if (gap === delGap) {
          events.push({ at: t, type: 'delete' });
          break;
        }
        if (gap === pubGap) {
          published = !published;
          events.push({ at: t, type: published ? 'publish' : 'unpublish' });
        } else {
          events.push({ at: t, type: 'edit' });
        }
      }
      out.push({ kind, index: i, id, createdAt, firstUpdatedAt, events });
    }
    return out;
  }

  private entityId(kind: CatalogKind, i: number, rng: Rng): string {
    if (kind !== 'tool') return rng.uuid();
    // Tools created after the start: custom or mcp ids.
    return `${i % 2 === 0 ? 'custom' : 'mcp'}:${rng.uuid()}`;
  }

  /** The entity's state at `now`, or null when it does not exist, is unpublished or deleted. */
  stateAt(entity: CatalogEntity, now: Micros): CatalogState | null {
    if (entity.createdAt > now) return null;
    let version = 0;
    let updatedAt = entity.firstUpdatedAt;
    let visible = true;
    for (const ev of entity.events) {
      if (ev.at > now) break;
      if (ev.type === 'delete') return null;
      if (ev.type === 'edit') version++;
      else visible = ev.type === 'publish';
      updatedAt = ev.at;
    }
    return visible ? { entity, version, updatedAt } : null;
  }

  find(kind: CatalogKind, id: string): CatalogEntity | undefined {
    return this.byId.get(`${kind}/${id}`);
  }

  /** Agents existing at `t`, for runs created then. */
  agentsAliveAt(t: Micros): CatalogEntity[] {
    return this.entities.agent.filter((e) => this.stateAt(e, t) !== null);
  }

  render(state: CatalogState): Json {
    const { entity, version, updatedAt } = state;
    const rng = rngFor(this.seed, entity.kind, 'content', entity.index, version);
    const stable = rngFor(this.seed, entity.kind, 'stable', entity.index);
    const created = formatTimestamp(entity.createdAt);
    const updated = formatTimestamp(updatedAt);
    switch (entity.kind) {
      case 'tool':
        return this.renderTool(entity, rng, stable, created, updated);
      case 'agent':
        return this.renderAgent(entity, rng, stable, created, updated);
      case 'guideline':
        return {
          id: entity.id,
          object: 'guideline',
          title: title(stable),
          content: paragraph(rng, 2, 8),
          section: this.section(stable.int(0, 5)),
          created_at: created,
          updated_at: updated,
        };
      case 'guardrail':
        return {
          id: entity.id,
          object: 'guardrail',
          title: title(stable),
          content: paragraph(rng, 1, 4),
          type: stable.chance(0.5) ? 'escalation' : 'restriction',
          created_at: created,
          updated_at: updated,
        };
      case 'runbook':
        return this.renderRunbook(entity, rng, stable, created, updated);
    }
  }

  private section(i: number): Json {
    const r = rngFor(this.seed, 'section', i);
    const names = ['Refunds', 'Shipping', 'Tone of voice', 'Escalations', 'Privacy', 'Produits'];
    return {
      id: r.uuid(),
      name: names[i % names.length],
      description: sentence(r),
      icon: r.pick(['book', 'truck', 'chat', 'shield', 'lock', '📦']),
    };
  }

  private identityOf(entity: CatalogEntity): ToolIdentity {
    const known = this.tools[entity.index];
    if (known && known.id === entity.id) return known;
    const type = entity.id.startsWith('custom:') ? 'custom_tool' : 'mcp_tool';
    const name = `${type === 'custom_tool' ? 'custom' : 'mcp'}_new_tool_${entity.index}`;
    return { index: entity.index, id: entity.id, type, name, label: name };
  }

  private renderTool(entity: CatalogEntity, rng: Rng, stable: Rng, created: string, updated: string): Json {
    const ident = this.identityOf(entity);
    const paramCount = rng.int(0, 5);
    const parameters: Json[] = [];
    for (let p = 0; p < paramCount; p++) {
      parameters.push({
        name: p === 0 ? 'id' : `${slug(rng, 1)}_${p}`,
        type: rng.pick(['string', 'integer', 'boolean', 'number', 'object', 'array']),
        required: rng.chance(0.5),
        description: sentence(rng, 3, 10),
        has_preset_value: rng.chance(0.2),
      });
    }
    const tool: Json = {
      id: ident.id,
      object: 'tool',
      type: ident.type,
      name: ident.name,
      description: sentence(rng, 5, 16),
      is_write_action: stable.chance(0.4),
      requires_approval: rng.chance(0.25),
      enabled: rng.chance(0.9),
      parameters,
    };
    // The spec types each sub-object as an object (never null) and leaves open which are present:
    // a tool carries the one of its own type only.
    if (ident.type === 'service_tool') {
      tool.service = {
        category: stable.pick(['knowledge', 'utility', 'messaging', 'analysis']),
        availability: rng.pick(['available', 'beta', 'deprecated']),
      };
    } else if (ident.type === 'app_tool') {
      const [integId, integName] = INTEGRATIONS.find(([k]) => ident.id.startsWith(`app:${k}.`)) ?? INTEGRATIONS[0];
      tool.app = {
        integration_id: integId,
        integration_name: integName,
        connection_mode: stable.pick(['oauth', 'api_key', 'shared', 'per_agent']),
        connection_status: rng.pick(['connected', 'connected', 'connected', 'disconnected', 'error']),
      };
    } else if (ident.type === 'custom_tool') {
      tool.custom = this.customTool(rng, stable);
    } else {
      const server = this.mcpServers[stable.int(0, this.mcpServers.length - 1)] as { id: string; name: string };
      tool.mcp = {
        server_id: server.id,
        server_name: server.name,
        mcp_tool_name: ident.name,
        input_schema: {
          type: 'object',
          properties: Object.fromEntries(parameters.map((p) => [p.name, { type: p.type, description: p.description }])),
          required: parameters.filter((p) => p.required).map((p) => p.name),
          ...(stable.chance(0.1) ? { $defs: { deep: deepJson(40) } } : {}),
        },
      };
    }
    tool.created_at = created;
    tool.updated_at = updated;
    return tool;
  }

  private customTool(rng: Rng, stable: Rng): Json {
    const secret = () => `sk_live_${rng.hex(24)}`;
    const headers: Json[] = [
      { name: 'Content-Type', value: 'application/json' },
      { name: 'X-Request-Source', value: 'support-agent' },
    ];
    const authKind = stable.pick(['bearer', 'basic', 'api_key', 'oauth2', 'none', 'header']);
    // `auth` is an object in the spec; a tool without authentication says so with type "none".
    let auth: Json;
    switch (authKind) {
      case 'bearer':
        auth = { type: 'bearer', token: secret() };
        break;
      case 'basic':
        auth = { type: 'basic', username: 'svc-support', password: `pw-${rng.hex(16)}` };
        break;
      case 'api_key':
        auth = { type: 'api_key', header: 'X-Api-Key', value: secret() };
        break;
      case 'oauth2':
        auth = {
          type: 'oauth2',
          client_id: `client-${stable.hex(8)}`,
          client_secret: secret(),
          token_url: 'https://auth.example.com/oauth/token',
          scopes: ['read', 'write'],
        };
        break;
      case 'header':
        auth = { type: 'none' };
        headers.push({ name: 'Authorization', value: `Bearer ${secret()}` });
        headers.push({ name: 'X-Api-Key', value: secret() });
        break;
      default:
        auth = stable.chance(0.5) ? { type: 'none' } : {};
    }
    if (stable.chance(0.3)) headers.push({ name: 'Cookie', value: `session=${rng.hex(20)}` });
    return {
      endpoint: `https://api.example.com/${slug(stable, 2).replace('_', '/')}`,
      method: stable.pick(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']),
      body_format: stable.pick(['json', 'form', 'none']),
      headers,
      http_timeout_sec: rng.pick([5, 10, 30, 60]),
      auth,
    };
  }

  private renderAgent(entity: CatalogEntity, rng: Rng, stable: Rng, created: string, updated: string): Json {
    const ids = (kind: CatalogKind, max: number) => {
      const list = this.entities[kind];
      const n = rng.int(0, Math.min(max, list.length));
      const chosen = new Set<string>();
      for (let k = 0; k < n; k++) chosen.add((rng.pick(list) as CatalogEntity).id);
      return [...chosen];
    };
    const names = [
      'Aria',
      'Support Bot',
      'Kundenservice',
      'Returns helper',
      'サポート',
      'Billing agent',
      'Tier-1 triage',
      'VIP concierge',
      'Helpdesk ✨',
      'Agent "Nova"',
      'Shipping desk',
      'Escalations',
    ];
    return {
      id: entity.id,
      object: 'agent',
      name: names[entity.index % names.length] + (entity.index >= names.length ? ` ${entity.index}` : ''),
      description: sentence(rng, 6, 16),
      status: rng.pick(['active', 'active', 'active', 'paused', 'draft']),
      instructions: paragraph(rng, 3, 10),
      // The world fills in the time of the agent's latest run; it moves without `updated_at` moving.
      last_run_at: created,
      start_with: {
        type: stable.pick(['greeting', 'runbook', 'triage', 'classification']),
        id: stable.uuid(),
        name: title(stable),
      },
      model_config: {
        model: rng.pick(['gpt-4.1', 'claude-sonnet', 'mixtral-8x7b']),
        temperature: Math.round(rng.next() * 100) / 100,
        max_tokens: rng.pick([1024, 2048, 4096]),
        tools: { parallel: rng.chance(0.5) },
        ...(stable.chance(0.2) ? { extra: jsonValue(rng, 4) } : {}),
      },
      tool_ids: ids('tool', 12),
      resolution_tracking: rng.chance(0.7),
      resolution_rule_ids: Array.from({ length: rng.int(0, 3) }, () => rng.uuid()),
      knowledge_tags: Array.from({ length: rng.int(0, 4) }, () => slug(rng, 1)),
      guideline_ids: ids('guideline', 8),
      guardrail_ids: ids('guardrail', 5),
      attribute_ids: this.attributes.filter(() => rng.chance(0.5)).map((a) => a.id),
      category_ids: this.categories.filter(() => rng.chance(0.3)).map((c) => c.id),
      included_runbook_ids: ids('runbook', 5),
      excluded_runbook_ids: ids('runbook', 2),
      included_workflow_ids: Array.from({ length: rng.int(0, 2) }, () => rng.uuid()),
      excluded_workflow_ids: [],
      created_at: created,
      updated_at: updated,
    };
  }

  private renderRunbook(entity: CatalogEntity, rng: Rng, stable: Rng, created: string, updated: string): Json {
    const agents = this.entities.agent;
    const used = new Set<string>();
    const n = rng.int(0, 3);
    for (let k = 0; k < n; k++) used.add((rng.pick(agents) as CatalogEntity).id);
    return {
      id: entity.id,
      object: 'runbook',
      name: title(stable),
      description: sentence(rng, 5, 14),
      content: paragraph(rng, 3, 12),
      type: stable.pick(['procedure', 'workflow', 'faq', 'playbook']),
      used_by_agent_ids: [...used],
      folder_id: stable.chance(0.8) ? `fld_${stable.hex(10)}` : '',
      inserts: Array.from({ length: rng.int(0, 4) }, () => ({
        id: rng.uuid(),
        name: title(rng),
        type: rng.pick(['snippet', 'macro', 'variable', 'link']),
        source: rng.pick(['library', 'inline', 'zendesk', 'notion']),
      })),
      model_config: { model: rng.pick(['default', 'fast', 'careful']), steps_limit: rng.int(5, 40) },
      created_at: created,
      updated_at: updated,
    };
  }
}

function exp(rng: Rng, meanDays: number): number {
  if (!Number.isFinite(meanDays)) return Infinity;
  return -Math.log(1 - rng.next()) * meanDays;
}
