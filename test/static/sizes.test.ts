import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';
import { describe, expect, it } from 'vitest';
import { CEILINGS, MAX_FILE_LINES, sizeRules } from '../../eslint/sizes.js';
import { ROOT } from '../support/system.js';

/**
 * The size rule (eslint/sizes.js): a new file over 400 lines or a new function over 80 fails the
 * lint; a file over the floor keeps its ceiling, which may only come down.
 */
const eslint = new ESLint({
  cwd: ROOT,
  overrideConfigFile: true,
  overrideConfig: [
    { files: ['**/*.ts'], languageOptions: { parser: tseslint.parser } },
    ...sizeRules(['libs/**/*.ts', 'services/**/*.ts', 'cli/**/*.ts', 'console/**/*.{ts,js}']),
  ],
});

async function rules(path: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: join(ROOT, path) });
  return result!.messages.map((m) => m.ruleId ?? m.message);
}

const statements = (n: number): string => Array.from({ length: n }, (_, i) => `  const v${i} = ${i};\n`).join('');

describe('sizes a person can hold', () => {
  it('refuses a new source file over 400 lines and a new function over 80', async () => {
    expect(await rules('services/proxy/src/new-file.ts', `export function f() {\n${statements(78)}}\n`)).toEqual([]);
    expect(await rules('services/proxy/src/new-file.ts', `export function f() {\n${statements(81)}}\n`)).toEqual([
      'max-lines-per-function',
    ]);
    const long = Array.from({ length: 420 }, (_, i) => `export const c${i} = ${i};`).join('\n') + '\n';
    expect(await rules('libs/domain/src/new-file.ts', long)).toEqual(['max-lines']);
    expect(await rules('test/registry/new-file.test.ts', long)).toEqual([]);
  });

  it('keeps each ceiling at or below its file, and only for a file over the floor', async () => {
    for (const [file, ceiling] of Object.entries(CEILINGS)) {
      if (ceiling.lines === undefined) continue;
      const lines = (await readFile(join(ROOT, file), 'utf8')).split('\n').length - 1;
      expect(ceiling.lines, `${file}: lower its ceiling to ${lines}`).toBeLessThanOrEqual(
        Math.max(lines, MAX_FILE_LINES),
      );
      expect(ceiling.lines, `${file}: under the floor now, remove its ceiling`).toBeGreaterThan(MAX_FILE_LINES);
    }
  });
});
