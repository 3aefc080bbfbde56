import { describe, expect, it } from 'vitest';
// The console's own module, loaded as the browser loads it.
import {
  INHERITED,
  InheritedLevels,
  choiceOf,
  permissionOptions,
  setPermissionFields,
  withPermission,
} from '../../console/public/permissions.js';

describe('tool permission levels in the console', () => {
  it('shows an override as its level and anything else as inherited', () => {
    expect(choiceOf({ name: 'add', permission: 'always_ask', permissionOverridden: true })).toBe('always_ask');
    expect(choiceOf({ name: 'drop', permission: 'always_ask' })).toBe(INHERITED);
    expect(choiceOf({ name: 'old' })).toBe(INHERITED);
  });

  it('offers inherited (with its level once known), act and always ask', () => {
    expect(permissionOptions('always_ask')).toEqual([
      { value: '', label: 'inherited (always ask)' },
      { value: 'act', label: 'act' },
      { value: 'always_ask', label: 'always ask' },
    ]);
    expect(permissionOptions(null)[0]).toEqual({ value: '', label: 'inherited' });
  });

  it('sends the remote name, and null to go back to inherited', () => {
    expect(setPermissionFields('acme', 'add', 'always_ask')).toEqual({
      server: 'acme',
      tool: 'add',
      permission: 'always_ask',
    });
    expect(setPermissionFields('github', 'get_issue', '')).toEqual({
      server: 'github',
      tool: 'get_issue',
      permission: null,
    });
    expect(() => setPermissionFields('acme', 'add', 'sometimes')).toThrow('not a permission level');
  });

  it('applies a reply to the listed tool', () => {
    const tool = { name: 'add', toolName: 'acme__add', permission: 'act' as const };
    const asked = withPermission(tool, { permission: 'always_ask', overridden: true });
    expect(asked).toEqual({ name: 'add', toolName: 'acme__add', permission: 'always_ask', permissionOverridden: true });
    expect(withPermission(asked, { permission: 'act', overridden: false })).toEqual(tool);
  });

  it('learns inherited levels from tools that are not overridden and from replies', () => {
    const levels = new InheritedLevels();
    expect(levels.of('acme', { name: 'add', permission: 'always_ask', permissionOverridden: true })).toBeNull();
    expect(levels.of('acme', { name: 'drop', permission: 'always_ask' })).toBe('always_ask');
    levels.learn({ server: 'acme', tool: 'add', inherited: 'act' });
    expect(levels.of('acme', { name: 'add', permission: 'always_ask', permissionOverridden: true })).toBe('act');
    expect(levels.of('other', { name: 'add', permission: 'always_ask', permissionOverridden: true })).toBeNull();
    // ListMcpServers names the inherited level of every tool, overridden or not.
    expect(
      levels.of('fresh', {
        name: 'add',
        permission: 'always_ask',
        permissionOverridden: true,
        inheritedPermission: 'act',
      }),
    ).toBe('act');
  });
});
