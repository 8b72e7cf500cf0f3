module.exports = {
  testEnvironment: 'node',
  transform: { '^.+\\.ts$': ['@swc/jest'] },
  testMatch: ['**/libs/query/src/filter/**/*.spec.ts'],
};
