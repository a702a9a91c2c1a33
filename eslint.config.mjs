import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', 'libs/proto/src/gen/**', 'libs/client/src/schema.ts', '.data/**', '.cache/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts', '**/*.tsx'],
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-console': 'error',
      eqeqeq: ['error', 'always'],
      // tsc compiles to CommonJS: a local named like a module binding shadows it in the emitted code (a local
      // `exports` made `exports.CONTENT_TYPES` undefined in audit's download RPC).
      'no-restricted-syntax': [
        'error',
        { selector: 'VariableDeclarator[id.name=/^(exports|module|require)$/]', message: 'shadows the CommonJS binding of the same name in the compiled code' },
        { selector: 'Identifier[name=/^(exports|module|require)$/][parent.type=/Function|ArrowFunctionExpression/]', message: 'shadows the CommonJS binding of the same name in the compiled code' },
      ],
    },
  },
  {
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    languageOptions: { globals: { require: 'readonly', module: 'writable', __dirname: 'readonly', process: 'readonly', console: 'readonly' } },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
