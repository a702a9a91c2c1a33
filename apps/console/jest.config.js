// Unit tests of the console's pure parts (PKCE, tokens, the OAuth session, API errors) in Node: no DOM, no
// browser; the pages themselves are tested in Chromium by apps/gateway-e2e (console.test.ts).
const path = require('node:path');
const preset = require('../../jest.preset.js')(__dirname, { testMatch: ['<rootDir>/src/**/*.spec.ts'] });

module.exports = {
  ...preset,
  // The one file of @secsvc/shared the console imports (as vite.config.mts and tsconfig.json resolve it).
  moduleNameMapper: { '^@secsvc/shared/event-kinds$': path.join(__dirname, '../../libs/shared/src/event-kinds.ts'), ...preset.moduleNameMapper },
};
