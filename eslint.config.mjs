import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: ['**/dist/**', '**/node_modules/**', '**/generated/**', '.tools/**', 'infra/kafka/.lib/**', 'coverage/**'],
  },
  js.configs.recommended,
  {
    files: ['**/*.ts'],
    extends: [tseslint.configs.strictTypeChecked],
    languageOptions: {
      // One program for the whole workspace (the root tsconfig.json, which includes every package's sources and
      // tests), as the type-check builds it: a project per package would type the shared packages again in each
      // of their dependents' programs, and cost the lint lane about twice the CPU.
      parserOptions: {
        project: ['./tsconfig.json'],
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false } }],
      // Numbers read naturally in messages and URLs; every other non-string still has to be converted on purpose.
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true }],
      // `() => void work()` and `(x) => res.end(x)` state their intent; a void value used anywhere else is still an error.
      '@typescript-eslint/no-confusing-void-expression': ['error', { ignoreArrowShorthand: true }],
      'no-console': 'error',
      eqeqeq: ['error', 'always', { null: 'ignore' }],
    },
  },
  {
    // Tests: a value asserted present with expect() is then read with `!`; cleanup hooks guard what a failed
    // beforeAll left unassigned (`await system?.stop()`), which a `let system: System` declaration cannot express;
    // jest's asymmetric matchers (expect.any, expect.stringMatching) are typed `any`; test doubles implement
    // Promise-returning interfaces with async functions that have nothing to await.
    files: ['**/test/**/*.ts', 'e2e/**/*.ts', 'bench/**/*.ts'],
    rules: {
      '@typescript-eslint/no-non-null-assertion': 'off',
      '@typescript-eslint/no-unnecessary-condition': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/require-await': 'off',
    },
  },
  {
    files: ['**/*.js', '**/*.cjs', '**/*.mjs'],
    extends: [tseslint.configs.recommended, tseslint.configs.disableTypeChecked],
    languageOptions: { globals: { ...globals.node } },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    files: ['scripts/**', '**/test/**'],
    rules: { 'no-console': 'off' },
  },
);
