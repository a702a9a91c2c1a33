// Unit tests of the console's pure parts (PKCE, tokens, the OAuth session, API errors) in Node: no DOM, no
// browser; the pages themselves are tested in Chromium by apps/gateway-e2e (console.test.ts).
module.exports = require('../../jest.preset.js')(__dirname, { testMatch: ['<rootDir>/src/**/*.spec.ts'] });
