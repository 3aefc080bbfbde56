import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import layering from './eslint/layering.js';
import { sizeRules } from './eslint/sizes.js';

export default tseslint.config(
  {
    ignores: [
      '**/node_modules/**',
      '**/dist-types/**',
      // The services' bundles (`npm run build`): generated, like `.data/bundles` of `npm start`.
      'dist/**',
      '.data/**',
      'vitest.config.ts',
      'eslint.config.js',
      'console/public/*.d.ts',
      'eslint/*.d.ts',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      // One program for the whole tree (tsconfig.eslint.json, the build's options): the project
      // service would build one per tsconfig, each holding the sources of all it references, and
      // parse the shared sources and declarations again and again. A TypeScript file outside it
      // fails the lint ("not included in the project"): add its folder there.
      parserOptions: { project: './tsconfig.eslint.json', tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/restrict-template-expressions': 'off',
    },
  },
  {
    // The floors of the house (eslint/layering.js): what each package may import.
    files: ['libs/**/*.ts', 'services/**/*.ts', 'cli/**/*.ts', 'console/**/*.{ts,js}'],
    plugins: { layering },
    rules: { 'layering/floors': 'error' },
  },
  {
    // The endpoint and the proxy run with an explicit trace context (docs/operations.md#trace-context):
    // the active context is the root after any await, so their code passes the context by hand.
    files: ['services/endpoint/src/**/*.ts', 'services/proxy/src/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-properties': [
        'error',
        ...['with', 'active', 'bind'].map((property) => ({
          object: 'context',
          property,
          message: 'pass the trace context by hand here (docs/operations.md#trace-context)',
        })),
        ...['getActiveSpan', 'getActiveSpanContext'].map((property) => ({
          object: 'trace',
          property,
          message: 'pass the span by hand here (docs/operations.md#trace-context)',
        })),
      ],
    },
  },
  ...sizeRules(['libs/**/*.ts', 'services/**/*.ts', 'cli/**/*.ts', 'console/**/*.{ts,js}']),
  {
    files: ['**/*.js', '**/*.mjs'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      ...tseslint.configs.disableTypeChecked.languageOptions,
      globals: { process: 'readonly', console: 'readonly', URL: 'readonly', setTimeout: 'readonly' },
    },
  },
  {
    files: ['console/public/**/*.js'],
    languageOptions: {
      globals: Object.fromEntries(
        [
          'document',
          'window',
          'localStorage',
          'location',
          'crypto',
          'fetch',
          'btoa',
          'atob',
          'confirm',
          'EventSource',
          'TextEncoder',
          'DataView',
          'ArrayBuffer',
          'Uint8Array',
          'URL',
          'setTimeout',
          'clearTimeout',
          'setInterval',
          'clearInterval',
        ].map((g) => [g, 'readonly']),
      ),
    },
  },
);
