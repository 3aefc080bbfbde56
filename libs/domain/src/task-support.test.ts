import { describe, expect, it } from 'vitest';
import { buildToolDocuments, taskSupportOf } from './document.js';
import { ToolNameStyle } from './types.js';

describe("a tool's task support on its document (docs/tasks.md)", () => {
  it('keeps required and optional, nothing else', () => {
    expect(taskSupportOf({ taskSupport: 'required' })).toBe('required');
    expect(taskSupportOf({ taskSupport: 'optional' })).toBe('optional');
    for (const v of [
      { taskSupport: 'forbidden' },
      { taskSupport: 'REQUIRED' },
      { taskSupport: 1 },
      {},
      null,
      'required',
      ['required'],
    ])
      expect(taskSupportOf(v)).toBeUndefined();
  });

  it('a document carries taskSupport only when the tool has it, so other documents (and their CIDs) do not change', () => {
    const docs = buildToolDocuments(
      'every',
      [
        { name: 'research', execution: { taskSupport: 'required' } },
        { name: 'export', execution: { taskSupport: 'optional' } },
        { name: 'echo', execution: { taskSupport: 'forbidden' } },
        { name: 'plain' },
      ],
      { style: ToolNameStyle.double_underscore },
    );
    expect(docs.map((d) => [d.name, d.taskSupport])).toEqual([
      ['every__research', 'required'],
      ['every__export', 'optional'],
      ['every__echo', undefined],
      ['every__plain', undefined],
    ]);
    expect(Object.hasOwn(docs[2]!, 'taskSupport')).toBe(false);
  });
});
