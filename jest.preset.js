// One Jest setup for every project: SWC transpiles TypeScript (type checking is the `typecheck` target),
// workspace libraries resolve to their sources so unit tests need no build.
const path = require('node:path');

module.exports = (projectDir, overrides = {}) => ({
  rootDir: projectDir,
  testEnvironment: 'node',
  testMatch: ['<rootDir>/src/**/*.spec.ts', '<rootDir>/test/**/*.test.ts'],
  transform: {
    '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022', parser: { syntax: 'typescript' } } }],
    // Packages published as ES modules only (Node runs them through require(esm); Jest's loader cannot): SWC
    // turns them into CommonJS.
    '^.+\\.js$': ['@swc/jest', { jsc: { target: 'es2022' }, module: { type: 'commonjs' } }],
  },
  transformIgnorePatterns: ['/node_modules/(?!(jose|openid-client|oauth4webapi|@platformatic/kafka)/)'],
  moduleNameMapper: {
    '^@secsvc/shared$': path.join(__dirname, 'libs/shared/src/index.ts'),
    '^@secsvc/shared/(.*)$': path.join(__dirname, 'libs/shared/src/$1/index.ts'),
    '^@secsvc/dev$': path.join(__dirname, 'libs/dev/src/index.ts'),
    '^@secsvc/dev/(.*)$': path.join(__dirname, 'libs/dev/src/$1/index.ts'),
    '^@secsvc/proto$': path.join(__dirname, 'libs/proto/src/index.ts'),
    '^@secsvc/client$': path.join(__dirname, 'libs/client/src/index.ts'),
  },
  testTimeout: 30000,
  ...overrides,
});
