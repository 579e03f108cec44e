// typescript-eslint with type-aware promise rules: a daemon full of child-process callbacks needs them.
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'bench/**', 'examples/**', 'bin/**', 'vitest.config.ts', 'eslint.config.js', 'board/vite.config.ts'] },
  {
    files: ['src/**/*.ts', 'test/**/*.ts', 'board/src/**/*.{ts,tsx}'],
    extends: [tseslint.configs.base],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-restricted-imports': ['error', { patterns: [{ regex: '^(fs|path|child_process|os|crypto|url|util|events|stream)$', message: 'use the node: prefix' }] }],
    },
  },
  {
    // spec: domain/ is pure — no node:, no sqlite
    files: ['src/domain/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ regex: '^node:', message: 'domain/ is pure: no node: imports' }, { regex: 'better-sqlite3' }] }],
    },
  },
);
