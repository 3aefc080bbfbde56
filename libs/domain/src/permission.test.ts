import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { Permission } from './types.js';
import { inheritPermission, nameWords } from './permission.js';

const custom = (toolName = 'anything') => ({ builtin: false, toolName });
const builtin = (toolName: string) => ({ builtin: true, toolName });

describe('inheritPermission', () => {
  it('follows the inherited-permission table of docs/call.md#permissions', () => {
    expect(inheritPermission({ readOnlyHint: true }, custom())).toBe(Permission.act);
    expect(inheritPermission({ destructiveHint: true }, custom())).toBe(Permission.always_ask);
    expect(inheritPermission({}, custom('delete_everything'))).toBe(Permission.act);
    expect(inheritPermission(undefined, custom())).toBe(Permission.act);
  });

  it('honours a destructive hint over a read-only one', () => {
    expect(inheritPermission({ readOnlyHint: true, destructiveHint: true }, custom())).toBe(Permission.always_ask);
    expect(inheritPermission({ readOnlyHint: true, destructiveHint: true }, builtin('get_x'))).toBe(
      Permission.always_ask,
    );
  });

  it('ignores hints that are not true booleans', () => {
    const loose = { destructiveHint: 'true', readOnlyHint: 1 } as unknown as Record<string, boolean>;
    expect(inheritPermission(loose, custom())).toBe(Permission.act);
    expect(inheritPermission(loose, builtin('create_x'))).toBe(Permission.always_ask);
  });

  it('uses the name heuristic for built-in servers without hints', () => {
    for (const name of [
      'get_issue',
      'listRepos',
      'search-docs',
      'read_file',
      'find',
      'fetchPage',
      'query_db',
      'describe_table',
      'show',
      'VIEW_ITEM',
    ]) {
      expect(inheritPermission(undefined, builtin(name))).toBe(Permission.act);
    }
    for (const name of [
      'create_issue',
      'updateRepo',
      'delete',
      'remove_member',
      'send_email',
      'write_file',
      'post',
      'put_object',
      'patch',
      'set_status',
      'drop_table',
      'archive',
      'move_card',
      'merge_pr',
      'closeIssue',
    ]) {
      expect(inheritPermission(undefined, builtin(name))).toBe(Permission.always_ask);
    }
    expect(inheritPermission(undefined, builtin('get_or_create_user'))).toBe(Permission.always_ask);
    expect(inheritPermission(undefined, builtin('frobnicate'))).toBe(Permission.always_ask);
    expect(inheritPermission({ readOnlyHint: true }, builtin('delete_x'))).toBe(Permission.act);
  });

  it('never asks on a custom server unless told destructive', () => {
    fc.assert(
      fc.property(fc.string(), fc.option(fc.boolean(), { nil: undefined }), (name, readOnly) => {
        const annotations = readOnly === undefined ? {} : { readOnlyHint: readOnly };
        expect(inheritPermission(annotations, custom(name))).toBe(Permission.act);
        expect(inheritPermission({ ...annotations, destructiveHint: true }, builtin(name))).toBe(Permission.always_ask);
      }),
    );
  });
});

describe('nameWords', () => {
  it('splits snake, kebab and camel case', () => {
    expect(nameWords('createIssue')).toEqual(['create', 'issue']);
    expect(nameWords('HTTPGetURL')).toEqual(['http', 'get', 'url']);
    expect(nameWords('list-open_prs')).toEqual(['list', 'open', 'prs']);
  });
});
