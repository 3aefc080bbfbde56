import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WireError, type ToolSearchReply } from '@mcpx/contracts';
import { startTestMcpServer, type TestMcpServer, type TestTool } from '../servers/index.js';
import type { ApiClient } from '../support/api-client.js';
import { cliEnvFor, runCli } from '../support/cli.js';
import { RegistryHarness } from '../support/registry-harness.js';
import { eventually } from '../support/system.js';

function tool(name: string, description: string): TestTool {
  return { name, description, handler: () => ({ content: [{ type: 'text', text: 'ok' }] }) };
}

const TICKETS = [
  tool('create_issue', 'Open a new ticket in the tracker.'),
  tool('list_tickets', 'Lists tickets; use it to find an issue by its title.'),
  tool('close_ticket', 'Close a ticket (see the status page).'),
];
const DOCS = [
  tool('search_documents', 'Full-text search over the knowledge base.'),
  tool('fetch_page', 'Fetch one page of documentation.'),
];

/** Every tool name of a reply, best first. */
function names(res: ToolSearchReply): string[] {
  return res.families.flatMap((f) => f.tools.map((t) => t.name));
}

async function refused(p: Promise<unknown>): Promise<WireError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(WireError);
  return err as WireError;
}

/**
 * SearchTools through the action API: the registry forwards it to the projector, which ranks the
 * account's tool documents with Postgres full-text search and groups them by family `mcp:<server>`.
 * The tools come from servers of both eras (tickets and notes are modern, docs and the other
 * account's legacy).
 */
describe('tool search (families)', () => {
  let h: RegistryHarness;
  let tickets: TestMcpServer;
  let docs: TestMcpServer;
  let notes: TestMcpServer;
  let other: TestMcpServer;
  let api: ApiClient;
  let otherApi: ApiClient;

  const search = (fields: Record<string, unknown>, client = api): Promise<ToolSearchReply> =>
    client.act<ToolSearchReply>('SearchTools', fields);

  beforeAll(async () => {
    [h, tickets, docs, notes, other] = await Promise.all([
      RegistryHarness.start({ logSink: () => undefined }),
      startTestMcpServer({ era: 'modern', tools: TICKETS }),
      startTestMcpServer({ tools: DOCS }),
      startTestMcpServer({ era: 'modern', tools: [tool('jot', 'Write a short note.')] }),
      startTestMcpServer({
        tools: [tool('issue_secret', "Another account's issue tracker; never shown to anyone else.")],
      }),
    ]);
    api = h.api();
    otherApi = h.api();
    await api.act('SetMcpServer', { name: 'tickets', config: { url: tickets.url } });
    await api.act('SetMcpServer', { name: 'docs', config: { url: docs.url } });
    await api.act('SetMcpServer', { name: 'notes', config: { url: notes.url } });
    // Another account, with a server of the same name.
    await otherApi.act('SetMcpServer', { name: 'tickets', config: { url: other.url } });
    await api.act('CreateAgent', { name: 'reader', definition: { mcpServers: ['docs'] } });
    await eventually(async () =>
      (await api.act('ListAgentTools', { agent: 'reader' })).tools.length === 2 ? true : undefined,
    );
    await eventually(async () =>
      names(await search({ query: 'jot' })).length === 1 && names(await search({ query: 'ticket' })).length === 3
        ? true
        : undefined,
    );
    await eventually(async () => (names(await search({ query: 'secret' }, otherApi)).length === 1 ? true : undefined));
  });

  afterAll(async () => {
    await Promise.allSettled([tickets?.close(), docs?.close(), notes?.close(), other?.close()]);
    await h?.stop();
  });

  it('ranks a match in the name above a match in the description', async () => {
    const res = await search({ query: 'issue' });
    expect(res.families.map((f) => f.family)).toEqual(['mcp:tickets']);
    expect(res.families[0]?.server).toBe('tickets');
    const [first, second, ...rest] = res.families[0]?.tools ?? [];
    expect(first).toMatchObject({ name: 'tickets__create_issue', description: 'Open a new ticket in the tracker.' });
    expect(first?.cid).toMatch(/^bafy/);
    expect(second?.name).toBe('tickets__list_tickets');
    expect(rest).toEqual([]);
    expect(first?.score).toBeGreaterThanOrEqual(1);
    expect(second?.score).toBeLessThan(1);
    expect(second?.score).toBeGreaterThan(0);
  });

  it('orders families by their best tool', async () => {
    // fetch_page matches by name; close_ticket only by description.
    const res = await search({ query: 'page' });
    expect(res.families.map((f) => f.family)).toEqual(['mcp:docs', 'mcp:tickets']);
    expect(names(res)).toEqual(['docs__fetch_page', 'tickets__close_ticket']);
  });

  it('matches partial words, stems, and whole tool names', async () => {
    expect(names(await search({ query: 'creat' }))).toEqual(['tickets__create_issue']);
    expect(names(await search({ query: 'docu' }))).toEqual(['docs__search_documents', 'docs__fetch_page']);
    expect(names(await search({ query: 'knowl' }))).toEqual(['docs__search_documents']);
    expect(names(await search({ query: 'issues' }))).toContain('tickets__create_issue');
    expect(names(await search({ query: 'tickets__create_issue' }))[0]).toBe('tickets__create_issue');
    expect(names(await search({ query: 'createIssue' }))[0]).toBe('tickets__create_issue');
    expect(names(await search({ query: 'ticket -close' }))).toEqual(['tickets__list_tickets', 'tickets__create_issue']);
    // A query with no words at all falls back to the name (ILIKE).
    expect(names(await search({ query: '__', limit: 100 })).length).toBe(6);
  });

  it('keeps to one family with `family`, and bounds the answer with `limit`', async () => {
    expect(names(await search({ query: 'page', family: 'mcp:docs' }))).toEqual(['docs__fetch_page']);
    expect(names(await search({ query: 'page', family: 'mcp:tickets' }))).toEqual(['tickets__close_ticket']);
    expect(await search({ query: 'page', family: 'mcp:nothing' })).toEqual({ families: [] });
    expect(names(await search({ query: 'ticket', limit: 1 }))).toHaveLength(1);
  });

  it("keeps to the agent's effective set with `agent` (ungranted servers left out)", async () => {
    const res = await search({ query: 'page', agent: 'reader' });
    expect(res.families.map((f) => f.family)).toEqual(['mcp:docs']);
    expect(await search({ query: 'ticket', agent: 'reader' })).toEqual({ families: [] });
    const err = await refused(search({ query: 'page', agent: 'nobody' }));
    expect(err.code).toBe('not_found');
    expect(err.details.field).toBe('agent');
  });

  it("never returns another account's tools", async () => {
    const mine = await search({ query: 'issue', limit: 100 });
    expect(names(mine)).not.toContain('tickets__issue_secret');
    expect(await search({ query: 'secret' })).toEqual({ families: [] });
    const theirs = await search({ query: 'issue', limit: 100 }, otherApi);
    expect(names(theirs)).toEqual(['tickets__issue_secret']);
    const ours = new Set(mine.families.flatMap((f) => f.tools.map((t) => t.cid)));
    for (const t of theirs.families.flatMap((f) => f.tools)) expect(ours.has(t.cid)).toBe(false);
  });

  it('re-indexes a contract change: a new description is found by the words it brings', async () => {
    const before = await search({ query: 'jot' });
    expect(await search({ query: 'reminder' })).toEqual({ families: [] });
    notes.setTools([tool('jot', 'Save a reminder for later.')]);
    await api.act('RefreshMcpServer', { name: 'notes' });
    const after = await eventually(async () => {
      const r = await search({ query: 'reminder' });
      return r.families.length > 0 ? r : undefined;
    });
    expect(after.families[0]?.tools[0]).toMatchObject({
      name: 'notes__jot',
      description: 'Save a reminder for later.',
    });
    expect(after.families[0]?.tools[0]?.cid).not.toBe(before.families[0]?.tools[0]?.cid);
    expect(await search({ query: 'short note' })).toEqual({ families: [] });
  });

  it('refuses bad input with a typed error naming the field', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{}, 'query'],
      [{ query: '   ' }, 'query'],
      [{ query: 42 }, 'query'],
      [{ query: 'x'.repeat(257) }, 'query'],
      [{ query: 'page', family: 'docs' }, 'family'],
      [{ query: 'page', family: 'mcp:Bad Name' }, 'family'],
      [{ query: 'page', family: 'mcp:' }, 'family'],
      [{ query: 'page', limit: 0 }, 'limit'],
      [{ query: 'page', limit: 101 }, 'limit'],
      [{ query: 'page', limit: 1.5 }, 'limit'],
      [{ query: 'page', agent: '' }, 'agent'],
    ];
    for (const [fields, field] of cases) {
      const err = await refused(search(fields));
      expect(err.code, JSON.stringify(fields)).toBe('invalid_input');
      expect(err.details.field, JSON.stringify(fields)).toBe(field);
    }
    expect(names(await search({ query: 'x'.repeat(256) }))).toEqual([]);
  });

  it('answers `mcpx tools search` on the command line', async () => {
    const { env } = cliEnvFor(api);
    const json = await runCli(['tools', 'search', 'page', '--family', 'mcp:docs', '--json'], env);
    expect(json.code, json.stderr).toBe(0);
    const res = JSON.parse(json.stdout) as ToolSearchReply;
    expect(res.families).toEqual([
      { family: 'mcp:docs', server: 'docs', tools: [expect.objectContaining({ name: 'docs__fetch_page' })] },
    ]);
    const human = await runCli(['tools', 'search', 'issue', '--agent', 'reader'], env);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout.trim()).toBe('no tools match "issue"');
    const bad = await runCli(['tools', 'search', 'page', '--family', 'docs'], env);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('family');
  });
});
