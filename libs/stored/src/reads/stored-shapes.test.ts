import { encodePayload } from '@mcpx/contracts';
import { buildToolDocuments, type RemoteTool } from '@mcpx/domain';
import { describe, expect, it } from 'vitest';
import { AgentDefinitionColumn, ToolMapColumn } from './agents.js';
import {
  BuiltinToolsColumn,
  DiscoveredToolsColumn,
  HeldChangesColumn,
  ServerToolsColumn,
  ToolChangeColumn,
  ToolContractColumn,
} from './server-tools.js';
import { StoredShapeError } from './stored-shape.js';
import { HeldToolsColumn, ToolDocumentColumn } from './tool-documents.js';

/** The error `run` throws, which must be a StoredShapeError. */
function refusal(run: () => unknown): StoredShapeError {
  try {
    run();
  } catch (err) {
    expect(err).toBeInstanceOf(StoredShapeError);
    return err as StoredShapeError;
  }
  throw new Error('expected a refusal');
}

const tools: RemoteTool[] = [
  {
    name: 'search',
    description: 'Finds',
    inputSchema: { type: 'object', properties: { q: { type: 'string' } } },
    annotations: { readOnlyHint: true },
  },
  // A field this version does not name (a newer MCP's) is kept as written: a CID is computed over it.
  {
    name: 'delete',
    title: 'Delete',
    inputSchema: { type: 'object' },
    icons: [{ src: 'https://x.test/i.png' }],
  } as RemoteTool,
];

describe('stored tool lists (tools_cbor, discovered_cbor)', () => {
  it('round-trips a list whole, unknown fields and all, through every column that holds one', () => {
    for (const column of [ServerToolsColumn, DiscoveredToolsColumn, BuiltinToolsColumn]) {
      expect(column.decode(column.encode(tools))).toEqual(tools);
      expect(column.decode(column.encode([]))).toEqual([]);
    }
  });

  it('refuses a row of another shape with a typed error naming the column and the field, never a value', () => {
    const notAList = refusal(() => ServerToolsColumn.decode(encodePayload({ search: 'secret-value' })));
    expect(notAList).toMatchObject({
      code: 'stored_shape_invalid',
      column: 'registry.mcp_servers.tools_cbor',
      field: 'tools_cbor',
    });
    expect(notAList.message).not.toContain('secret-value');
    const noName = refusal(() => BuiltinToolsColumn.decode(encodePayload([{ name: 'ok' }, { description: 'x' }])));
    expect(noName).toMatchObject({ column: 'registry.builtin_discoveries.tools_cbor', field: 'tools_cbor[1].name' });
    expect(refusal(() => ServerToolsColumn.decode(new Uint8Array([0xff, 0x00]))).code).toBe('stored_shape_invalid');
  });

  it('refuses to write what a reader would refuse (the writer encodes through the same rule)', () => {
    expect(refusal(() => ServerToolsColumn.encode([{ name: '' }])).field).toBe('tools_cbor[0].name');
  });
});

describe("a pinned server's contracts and held changes (tool_contracts, tool_changes, held_cbor)", () => {
  it('round-trips one tool whole through the accepted and the held column', () => {
    for (const column of [ToolContractColumn, ToolChangeColumn]) {
      for (const tool of tools) expect(column.decode(column.encode(tool))).toEqual(tool);
    }
  });

  it('refuses a tool of another shape with a typed error naming the column and the field', () => {
    const noName = refusal(() => ToolChangeColumn.decode(encodePayload({ description: 'secret-value' })));
    expect(noName).toMatchObject({
      code: 'stored_shape_invalid',
      column: 'registry.tool_changes.tool_cbor',
      field: 'tool_cbor.name',
    });
    expect(noName.message).not.toContain('secret-value');
    expect(refusal(() => ToolContractColumn.decode(encodePayload([tools[0]])))).toMatchObject({
      column: 'registry.tool_contracts.tool_cbor',
      field: 'tool_cbor',
    });
    expect(refusal(() => ToolChangeColumn.encode({ name: '' })).field).toBe('tool_cbor.name');
  });

  it('round-trips held changes and refuses a row of another shape, on decode and on encode', () => {
    const held = [
      { name: 'send', cid: 'bafy1', reason: 'held_for_review' as const, state: 'pending' as const, withheld: true },
      { name: 'lookup', cid: 'bafy2', reason: 'held_for_review' as const, state: 'rejected' as const, withheld: false },
    ];
    expect(HeldChangesColumn.decode(HeldChangesColumn.encode(held))).toEqual(held);
    const notWithheld = refusal(() =>
      HeldChangesColumn.decode(
        encodePayload([{ name: 'send', cid: 'bafy1', reason: 'held_for_review', state: 'pending', withheld: 'yes' }]),
      ),
    );
    expect(notWithheld).toMatchObject({
      code: 'stored_shape_invalid',
      column: 'registry.mcp_servers.held_cbor',
      field: 'held_cbor[0].withheld',
    });
    expect(refusal(() => HeldChangesColumn.decode(encodePayload({ send: 'bafy1' }))).field).toBe('held_cbor');
    expect(refusal(() => HeldChangesColumn.encode([{ ...held[0]!, state: 'accepted' as 'pending' }])).field).toBe(
      'held_cbor[0].state',
    );
  });
});

describe('agent definitions (definition_cbor)', () => {
  it('round-trips a grant and the runtime answering forms; reads `person` and an absent grant as the registry always has', () => {
    const runtime = { mcpServers: ['github', 'shop'], inputs: { forms: 'runtime' as const } };
    expect(AgentDefinitionColumn.decode(AgentDefinitionColumn.encode(runtime))).toEqual(runtime);
    expect(
      AgentDefinitionColumn.decode(AgentDefinitionColumn.encode({ mcpServers: ['a'], inputs: { forms: 'person' } })),
    ).toEqual({ mcpServers: ['a'] });
    expect(AgentDefinitionColumn.decode(encodePayload({}))).toEqual({ mcpServers: [] });
  });

  it('refuses a definition of another shape, naming the field', () => {
    expect(refusal(() => AgentDefinitionColumn.decode(encodePayload({ mcpServers: 'github' })))).toMatchObject({
      column: 'registry.agents.definition_cbor',
      field: 'definition_cbor.mcpServers',
    });
    expect(
      refusal(() => AgentDefinitionColumn.decode(encodePayload({ mcpServers: [], inputs: { forms: 'robot' } }))).field,
    ).toBe('definition_cbor.inputs.forms');
    expect(refusal(() => AgentDefinitionColumn.decode(encodePayload(['github']))).code).toBe('stored_shape_invalid');
  });
});

describe('projected documents and maps (doc_cbor, tools, held)', () => {
  const [doc] = buildToolDocuments(
    'shop',
    [{ name: 'buy', description: 'Buys', inputSchema: { type: 'object', properties: { sku: { type: 'string' } } } }],
    { style: 'double_underscore' },
  );

  it('round-trips a document built by the projection whole', () => {
    expect(doc).toBeDefined();
    expect(ToolDocumentColumn.decode(ToolDocumentColumn.encode(doc!))).toEqual(doc);
  });

  it('refuses a document of another shape (a lambda document, a wrong level, a schema that is not an object)', () => {
    expect(refusal(() => ToolDocumentColumn.decode(encodePayload({ ...doc, kind: 'lambda' }))).field).toBe(
      'doc_cbor.kind',
    );
    expect(refusal(() => ToolDocumentColumn.decode(encodePayload({ ...doc, permission: 'never' }))).field).toBe(
      'doc_cbor.permission',
    );
    expect(refusal(() => ToolDocumentColumn.decode(encodePayload({ ...doc, inputSchema: 'object' }))).field).toBe(
      'doc_cbor.inputSchema',
    );
  });

  it('writes the jsonb maps as JSON text and checks what Postgres hands back', () => {
    const map = { shop__buy: 'bafy1' };
    expect(ToolMapColumn.check(JSON.parse(ToolMapColumn.encode(map)))).toEqual(map);
    const held = { shop__sell: { remoteName: 'sell', cid: 'bafy2' } };
    expect(HeldToolsColumn.check(JSON.parse(HeldToolsColumn.encode(held)))).toEqual(held);
    expect(refusal(() => ToolMapColumn.check({ shop__buy: 7 }))).toMatchObject({
      column: 'projector.projected_servers.tools',
      field: 'tools.shop__buy',
    });
    expect(refusal(() => HeldToolsColumn.check({ shop__sell: { cid: 'bafy2' } })).field).toBe(
      'held.shop__sell.remoteName',
    );
  });
});
