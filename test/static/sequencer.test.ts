import { access } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { AFTER_FIRST_WAVE, LONGEST, startOrder } from '../support/sequencer.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const soak = 'test/ops/soak.test.ts';

describe('the start order of the test files', () => {
  const files = [
    'libs/domain/src/names.test.ts',
    'test/registry/discovery.test.ts',
    soak,
    'test/static/layering.test.ts',
    'test/ops/faults/upstream.test.ts',
    'services/proxy/src/pool-rules.test.ts',
    'test/ops/multi-node.test.ts',
    'test/static/static-checks.test.ts',
    'test/conformance/conformance.test.ts',
    'test/ops/faults/registry-killed.test.ts',
  ];

  it('the longest first in their measured order, the soak after the first wave, then the groups in the given order', () => {
    expect(startOrder(files, 4)).toEqual([
      'test/static/static-checks.test.ts',
      'test/ops/faults/registry-killed.test.ts',
      'test/conformance/conformance.test.ts',
      'test/ops/faults/upstream.test.ts',
      soak,
      'test/static/layering.test.ts',
      'test/ops/multi-node.test.ts',
      'test/registry/discovery.test.ts',
      'libs/domain/src/names.test.ts',
      'services/proxy/src/pool-rules.test.ts',
    ]);
  });

  it('keeps every file once, whatever the workers; one worker runs the longest first and the soak second', () => {
    for (const workers of [1, 2, 4, 8, 20]) {
      const order = startOrder(files, workers);
      expect([...order].sort()).toEqual([...files].sort());
      expect(order.indexOf(soak)).toBe(Math.min(workers, files.length - 1));
    }
    expect(startOrder(files, 1).slice(0, 2)).toEqual(['test/static/static-checks.test.ts', soak]);
  });

  it('a run of some files only: the named ones that are absent are skipped', () => {
    expect(startOrder([soak], 4)).toEqual([soak]);
    expect(startOrder(['test/registry/discovery.test.ts', 'libs/domain/src/names.test.ts'], 4)).toEqual([
      'test/registry/discovery.test.ts',
      'libs/domain/src/names.test.ts',
    ]);
  });

  it('names only files that exist', async () => {
    for (const f of [...LONGEST, ...AFTER_FIRST_WAVE]) await expect(access(join(ROOT, f))).resolves.toBeUndefined();
  });
});
