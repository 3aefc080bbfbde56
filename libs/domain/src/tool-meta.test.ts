import { describe, expect, it } from 'vitest';
import { buildToolDocuments } from './document.js';
import { TOOL_META_MAX_BYTES, toolAppUri, toolMetaOf, withAppUri } from './tool-meta.js';
import { ToolNameStyle } from './types.js';

describe('a tool’s _meta as a document keeps it', () => {
  it('keeps the server’s keys, ui first, without the connector’s own', () => {
    const meta = toolMetaOf({
      'com.example/a': 1,
      ui: { resourceUri: 'ui://w/v.html' },
      'io.mcpx/permission': 'act',
      'io.mcpx/omitted': { keys: ['forged'] },
    });
    expect(meta).toEqual({ ui: { resourceUri: 'ui://w/v.html' }, 'com.example/a': 1 });
    expect(Object.keys(meta!)[0]).toBe('ui');
    expect(toolMetaOf({ 'io.mcpx/x': 1 })).toBeUndefined();
    expect(toolMetaOf('not a map')).toBeUndefined();
    expect(toolMetaOf([1, 2])).toBeUndefined();
  });

  it('names what it does not keep: past the byte bound, too deep, __proto__, not JSON', () => {
    let deep: unknown = 'leaf';
    for (let i = 0; i < 40; i++) deep = { d: deep };
    const raw = JSON.parse(
      `{"ui":{"resourceUri":"ui://a"},"big":"${'x'.repeat(TOOL_META_MAX_BYTES)}","deep":${JSON.stringify(deep)},"__proto__":{"p":1},"nan":1}`,
    ) as Record<string, unknown>;
    raw.nan = Number.NaN;
    const meta = toolMetaOf(raw)!;
    expect(meta.ui).toEqual({ resourceUri: 'ui://a' });
    expect(meta['io.mcpx/omitted']).toEqual({ keys: ['big', 'deep', '__proto__', 'nan'], limit: TOOL_META_MAX_BYTES });
    expect(Object.hasOwn(meta, '__proto__')).toBe(false);
    expect(JSON.stringify(meta).length).toBeLessThanOrEqual(TOOL_META_MAX_BYTES);
  });

  it('keeps discovery’s marker when the document is built, and a forged one never', () => {
    const discovered = toolMetaOf({ ui: { resourceUri: 'ui://a' }, big: 'x'.repeat(TOOL_META_MAX_BYTES) });
    const [doc] = buildToolDocuments('s', [{ name: 't', _meta: discovered! }], {
      style: ToolNameStyle.double_underscore,
    });
    expect(doc?._meta).toEqual({
      ui: { resourceUri: 'ui://a' },
      'io.mcpx/omitted': { keys: ['big'], limit: TOOL_META_MAX_BYTES },
    });
    const [none] = buildToolDocuments('s', [{ name: 't' }], { style: ToolNameStyle.double_underscore });
    expect(none).not.toHaveProperty('_meta');
  });

  it('finds and renames an app’s resource URI in both of its shapes', () => {
    const meta = {
      ui: { resourceUri: 'ui://w/v.html', visibility: ['app'] },
      'ui/resourceUri': 'ui://w/v.html',
      other: 1,
    };
    expect(toolAppUri(meta)).toBe('ui://w/v.html');
    expect(toolAppUri({ 'ui/resourceUri': 'ui://flat' })).toBe('ui://flat');
    expect(toolAppUri({ other: 1 })).toBeUndefined();
    const renamed = withAppUri(meta, (u) => `ui://s/${encodeURIComponent(u)}`);
    expect(renamed).toEqual({
      ui: { resourceUri: 'ui://s/ui%3A%2F%2Fw%2Fv.html', visibility: ['app'] },
      'ui/resourceUri': 'ui://s/ui%3A%2F%2Fw%2Fv.html',
      other: 1,
    });
    expect(meta.ui.resourceUri).toBe('ui://w/v.html');
    const plain = { other: 1 };
    expect(withAppUri(plain, () => 'x')).toBe(plain);
  });
});
