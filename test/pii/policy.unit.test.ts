import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { piiSettingsOf } from '../../src/config/index.ts';
import {
  applyPolicy,
  createDetectors,
  defaultPolicyFile,
  isHashed,
  PolicyError,
  parsePolicy,
} from '../../src/pii/index.ts';
import { runDetail } from '../warehouse/run-fixture.ts';

const KEY = Buffer.from('a test key of some length');
const policyOf = (text: string, key: Buffer | null = KEY) => parsePolicy(text, { key, source: 'test.yaml' });
const defaultPolicy = () => policyOf(readFileSync(defaultPolicyFile(), 'utf8'));

function problemsOf(text: string, key: Buffer | null = KEY): string[] {
  try {
    policyOf(text, key);
  } catch (e) {
    expect(e).toBeInstanceOf(PolicyError);
    return [...(e as PolicyError).problems];
  }
  return [];
}

describe('detectors', () => {
  const d = createDetectors();
  it.each([
    ['write to jane.doe+x@example.co.uk please', 'write to [email] please'],
    ["D'Arcy.O'Connor@mail.example.com", '[email]'],
    ['zoë.müller@exämple.de', '[email]'],
    ['call +1 415-555-0134 now', 'call [phone] now'],
    ['call (415) 555-0134', 'call [phone]'],
    ['or 415.555.0134', 'or [phone]'],
    ['+44 20 7946 0958', '[phone]'],
    ['06 12 34 56 78', '[phone]'],
    ['0049 30 12345678', '[phone]'],
    ['card 4111 1111 1111 1111 ok', 'card [card] ok'],
    ['card 5500-0000-0000-0004', 'card [card]'],
    ['IBAN DE89 3704 0044 0532 0130 00.', 'IBAN [iban].'],
    ['GB82WEST12345698765432', '[iban]'],
    ['from 192.168.10.7 and 2001:db8:85a3::8a2e:370:7334', 'from [ip] and [ip]'],
  ])('finds personal data in %j', (text, redacted) => {
    expect(d.redact(text)).toBe(redacted);
    expect(d.redact(redacted)).toBe(redacted);
  });

  it.each([
    '2026-03-01T12:00:00Z',
    '2026-03-01 12:00:00',
    'epoch 1772323200',
    'at 12:30:45',
    'std::map and a::b',
    'order 123456789',
    'amount 0.123456789',
    'card 4111 1111 1111 1112',
    'DE00 3704 0044 0532 0130 00',
    'version 1.2.3',
    'pii:hmac:0123456789012345678901234567890a',
    '€42,00 and 50%',
    '[email] [phone]',
    'run 5e8f0612-3456-4789-8123-456789012345 and 4111-1111-1111-1111-aa',
    'ids 1d0a4c1e-0612-4345-9123-045678901234',
  ])('leaves %j alone', (text) => {
    expect(d.redact(text)).toBe(text);
    expect(d.find(text).size).toBe(0);
  });

  it('adds the patterns of a policy, with their own placeholder', () => {
    const c = createDetectors([{ name: 'order_number', source: '(?:ORD-[0-9]{6,})' }]);
    expect(c.redact('ORD-123456 for a@b.io')).toBe('[order_number] for [email]');
    expect(c.redact('[order_number]')).toBe('[order_number]');
  });
});

describe('applying a policy', () => {
  it('hashes, redacts and drops what the default policy names, and nothing else', () => {
    const policy = defaultPolicy();
    const detail = runDetail({
      ticket: { id: 'T1', title: 'Refund for jane@example.com', url: null },
      trigger: { customer_name: 'Jane Doe', message_text: 'call +1 415-555-0134', event_type: 'ticket.created' },
      conversation: [{ id: 'm1', order: 1, role: 'customer', user_name: 'Jane Doe', message: 'mail jane@example.com' }],
      steps: [
        {
          id: 's1',
          order: 1,
          type: 'tool_call',
          title: 'Lookup',
          tool: {
            name: 'lookup',
            input: { email: 'jane@example.com', limit: 5 },
            output: { customer: { name: 'Jane Doe', phone: 4155550134, tier: 'gold' }, note: 'ip 10.0.0.1' },
          },
        },
      ],
    });
    const before = JSON.stringify(detail);
    const out = applyPolicy(policy, 'runs', detail) as typeof detail;
    expect(JSON.stringify(detail)).toBe(before);
    const text = JSON.stringify(out);
    for (const gone of ['Jane Doe', 'jane@example.com', '415-555-0134', '4155550134', '10.0.0.1'])
      expect(text).not.toContain(gone);
    const t = out.trigger as Record<string, string>;
    expect(isHashed(t.customer_name as string)).toBe(true);
    expect(t.event_type).toBe('ticket.created');
    expect(t.message_text).toBe('call [phone]');
    expect((out.ticket as Record<string, unknown>).title).toBe('Refund for [email]');
    const m = (out.conversation as Record<string, string>[])[0] as Record<string, string>;
    expect(m.user_name).toBe(t.customer_name);
    expect(m.message).toBe('mail [email]');
    expect(m.id).toBe('m1');
    const tool = ((out.steps as Record<string, unknown>[])[0] as { tool: Record<string, Record<string, unknown>> })
      .tool;
    expect(tool.input?.limit).toBe(5);
    expect(isHashed(tool.input?.email as string)).toBe(true);
    const customer = tool.output?.customer as Record<string, unknown>;
    expect(customer.name).toBe(t.customer_name);
    expect(isHashed(customer.phone as string)).toBe(true);
    expect(customer.tier).toBe('gold');
    expect(tool.output?.note).toBe('ip [ip]');
    expect(out.id).toBe(detail.id);
    expect(applyPolicy(policy, 'runs', out)).toStrictEqual(out);
  });

  it('gives the same hash on every run with the same key, another with another key', () => {
    const text = 'tables:\n  runs:\n    trigger_customer_name: hash\n';
    const name = (key: string) =>
      (
        applyPolicy(policyOf(text, Buffer.from(key)), 'runs', runDetail({ trigger: { customer_name: 'Jane' } })) as {
          trigger: { customer_name: string };
        }
      ).trigger.customer_name;
    expect(name('key number one 123')).toBe(name('key number one 123'));
    expect(name('key number one 123')).not.toBe(name('key number two 123'));
  });

  it('lets the earlier rule decide, drops with everything inside, keeps what a keep rule names', () => {
    const policy = policyOf(
      [
        'tables:',
        '  run_steps:',
        '    tool_output:',
        '      $.secret: drop',
        '      $.public: keep',
        '      $..email: hash',
        '      $: redact',
        '  runs:',
        '    $.customer.email: hash',
        '    trigger_latest_comment: drop',
      ].join('\n'),
    );
    const out = applyPolicy(
      policy,
      'runs',
      runDetail({
        customer: { email: 'x@y.io', plan: 'pro' },
        trigger: { latest_comment: 'bye', customer_name: 'Jane' },
        steps: [
          {
            id: 's1',
            order: 1,
            tool: {
              output: {
                secret: { email: 'a@b.io' },
                public: 'call +1 415-555-0134',
                rows: [{ email: 'c@d.io' }, 'write e@f.io'],
              },
            },
          },
        ],
      }),
    ) as Record<string, unknown>;
    const output = ((out.steps as { tool: { output: Record<string, unknown> } }[])[0]?.tool.output ?? {}) as Record<
      string,
      unknown
    >;
    expect(output.secret).toBeUndefined();
    expect(output.public).toBe('call +1 415-555-0134');
    const rows = output.rows as [Record<string, string>, string];
    expect(isHashed(rows[0].email as string)).toBe(true);
    expect(rows[1]).toBe('write [email]');
    expect(isHashed((out.customer as Record<string, string>).email as string)).toBe(true);
    expect((out.customer as Record<string, string>).plan).toBe('pro');
    expect('latest_comment' in (out.trigger as object)).toBe(false);
    expect((out.trigger as Record<string, string>).customer_name).toBe('Jane');
  });
});

describe('a policy file', () => {
  it('says every problem, one line each, naming the setting, the file and the place', () => {
    const lines = problemsOf(
      [
        'tables:',
        '  runs:',
        '    trigger_customer_nam: hash',
        '    id: hash',
        '    duration_seconds: redact',
        '    trigger_message_text: scramble',
        '    $..email: hash',
        '    $.conversation.user_name: hash',
        '    ticket_title:',
        '      $.x: hash',
        '  run_stepz: {}',
        '  tools_history: {}',
        '  run_steps:',
        '    tool_output:',
        '      $.a[: hash',
        'patterns:',
        '  email: x',
        '  Bad: y',
        "  empty: 'a*'",
        'extra: 1',
      ].join('\n'),
    );
    expect(lines).toEqual([
      'test.yaml: extra: not a policy member (tables, patterns)',
      'test.yaml: patterns.email: is built in already',
      'test.yaml: patterns.Bad: a name is lower-case letters, digits and _',
      'test.yaml: patterns.empty: matches empty text',
      'test.yaml: tables.runs.trigger_customer_nam: no such column in runs; did you mean trigger_customer_name?',
      'test.yaml: tables.runs.id: is a key or a member every row needs; a policy cannot change it',
      'test.yaml: tables.runs.duration_seconds: redact is for text and JSON columns; duration_seconds is double (keep or drop it)',
      'test.yaml: tables.runs.trigger_message_text: must be keep, hash, redact or drop, not "scramble"',
      'test.yaml: tables.runs.$..email: at table level a path starts with a member ($.name…); name columns for the rest',
      'test.yaml: tables.runs.$.conversation.user_name: reaches the items of run_messages; give its rules under tables.run_messages',
      'test.yaml: tables.runs.ticket_title: rules by path are for JSON columns; ticket_title is text',
      'test.yaml: tables.run_stepz: no such table; did you mean run_steps?',
      'test.yaml: tables.tools_history: name tools; its history follows it',
      'test.yaml: tables.run_steps.tool_output.$.a[: unexpected "[" (at 4); paths are made of .name, [\'name\'], [*], .* and ..name',
    ]);
  });

  it('needs the key when it hashes, and says so without it', () => {
    expect(problemsOf('tables:\n  runs:\n    trigger_customer_name: hash\n', null)).toEqual([
      'test.yaml: hashes runs.trigger_customer_name, but RUNSYNC_PII_KEY (or RUNSYNC_PII_KEY_FILE) is not set; give a secret of at least 16 characters',
    ]);
    expect(problemsOf('tables: [1, 2')[0]).toMatch(/^test\.yaml: is not YAML or JSON: /);
    expect(problemsOf('{"tables": {"runs": {"ticket_title": "redact"}}}')).toEqual([]);
  });

  it('is read from the settings: off by default, default, or a file; the key never in a message', () => {
    expect(piiSettingsOf({}).policy).toBeNull();
    expect(piiSettingsOf({ RUNSYNC_PII_POLICY: 'off', RUNSYNC_PII_KEY: 'k'.repeat(20) }).policy).toBeNull();
    const chosen = piiSettingsOf({ RUNSYNC_PII_POLICY: 'default', RUNSYNC_PII_KEY: 'k'.repeat(20) });
    expect(chosen.policy?.source).toBe('default');
    expect(() => piiSettingsOf({ RUNSYNC_PII_POLICY: 'default', RUNSYNC_PII_KEY: 'short-secret' })).toThrow(
      'RUNSYNC_PII_KEY: the key must be at least 16 characters (a random secret)',
    );
    // Through the setting, each problem is a line that names it.
    const bad = { RUNSYNC_PII_POLICY: 'policy.yaml', RUNSYNC_PII_KEY: 'k'.repeat(20) };
    const text = 'tables:\n  runs:\n    id: hash\n    nope: drop\n';
    expect(() => piiSettingsOf(bad, { cwd: '/p', readFile: () => text })).toThrow(
      [
        'RUNSYNC_PII_POLICY: /p/policy.yaml: tables.runs.id: is a key or a member every row needs; a policy cannot change it',
        'RUNSYNC_PII_POLICY: /p/policy.yaml: tables.runs.nope: no such column in runs',
      ].join('\n'),
    );
    expect(() => piiSettingsOf({ RUNSYNC_PII_POLICY: '/nowhere/policy.yaml' })).toThrow(
      'RUNSYNC_PII_POLICY: cannot read /nowhere/policy.yaml (ENOENT); give off, default or a policy file',
    );
    const fromFile = piiSettingsOf(
      { RUNSYNC_PII_POLICY: 'default', RUNSYNC_PII_KEY_FILE: '/keys/pii' },
      {
        readFile: (p) => {
          if (p === '/keys/pii') return 'from a file, long enough\n';
          return readFileSync(p, 'utf8');
        },
      },
    );
    expect(fromFile.key).toBe('from a file, long enough');
  });
});
