// openid-client (and its oauth4webapi and jose) are ES modules only: SWC turns them into CommonJS for Jest.
const base = require('../../jest.preset.js')(__dirname);

module.exports = {
  ...base,
  transform: { ...base.transform, '^.+\\.js$': ['@swc/jest', { jsc: { target: 'es2022' }, module: { type: 'commonjs' } }] },
  transformIgnorePatterns: ['/node_modules/(?!(openid-client|oauth4webapi|jose)/)'],
};
