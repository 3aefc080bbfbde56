import { describe, expect, it } from 'vitest';
import { loweredLevels } from './lowered-levels.js';

describe('loweredLevels', () => {
  const drop = { name: 'drop', annotations: { destructiveHint: true } };
  it('names a tool whose destructiveHint went, or that became read-only', () => {
    expect(loweredLevels([drop], [{ name: 'drop' }])).toEqual(['drop']);
    expect(loweredLevels([drop], [{ name: 'drop', annotations: { readOnlyHint: true } }])).toEqual(['drop']);
    expect(loweredLevels([drop], [{ name: 'drop', annotations: 'junk' as unknown as object }])).toEqual(['drop']);
  });
  it('ignores raised, unchanged, new and removed tools', () => {
    expect(loweredLevels([{ name: 'echo' }], [{ name: 'echo', annotations: { destructiveHint: true } }])).toEqual([]);
    expect(loweredLevels([drop], [drop])).toEqual([]);
    expect(loweredLevels([], [{ name: 'new' }])).toEqual([]);
    expect(loweredLevels([drop], [])).toEqual([]);
  });
  it("uses a built-in's name heuristic where annotations say nothing", () => {
    expect(
      loweredLevels([{ name: 'create_issue' }], [{ name: 'create_issue', annotations: { readOnlyHint: true } }], true),
    ).toEqual(['create_issue']);
    expect(loweredLevels([{ name: 'create_issue' }], [{ name: 'create_issue' }], true)).toEqual([]);
  });
});
