// ESLint flat config. Its main job is @nx/enforce-module-boundaries: which project may import which,
// by the `type:*` and `scope:*` tags in each project.json. Run it with:
//   NX_DAEMON=false npx eslint apps libs tools --max-warnings=0
// (npm test does this too). No network and no Nx daemon are needed.
import { createRequire } from 'node:module';
import nx from '@nx/eslint-plugin';
import tseslint from 'typescript-eslint';

const require = createRequire(import.meta.url);

// The Nx rule only *reads* a cached project graph (.nx/workspace-data/project-graph.json); with no cache,
// as on a fresh clone, it prints a warning and silently checks nothing. So compute (or refresh) the graph
// here, in this process, from the project.json files and tsconfig.base.json paths before any file is linted.
process.env.NX_DAEMON ??= 'false';
{
  // @nx/devkit is what @nx/eslint-plugin itself uses (installed with it); nx is the direct devDependency.
  let devkit;
  try {
    devkit = require('@nx/devkit');
  } catch {
    devkit = require('nx/src/devkit-exports');
  }
  await devkit.createProjectGraphAsync({ exitOnError: true });
}

/**
 * type:* is the layer, scope:* the bounded context; a project must satisfy both axes. `testing` is the
 * test-only set: a domain library's specs may use it (specConstraints), its shipped code may not.
 */
const depConstraints = [
  { sourceTag: 'type:app', onlyDependOnLibsWithTags: ['type:domain', 'type:util', 'type:contracts', 'type:testing'] },
  { sourceTag: 'type:domain', onlyDependOnLibsWithTags: ['type:util', 'type:contracts'] },
  { sourceTag: 'type:util', onlyDependOnLibsWithTags: ['type:util', 'type:contracts', 'type:testing'] },
  { sourceTag: 'type:testing', onlyDependOnLibsWithTags: ['type:util', 'type:contracts', 'type:testing'] },
  { sourceTag: 'type:contracts', onlyDependOnLibsWithTags: ['type:contracts'] },
  // The single-process app and the end-to-end tests assemble every bounded context.
  { sourceTag: 'scope:standalone', onlyDependOnLibsWithTags: ['*'] },
  { sourceTag: 'scope:e2e', onlyDependOnLibsWithTags: ['*'] },
  // The browser app: the shared contracts' types, nothing that runs on a server.
  { sourceTag: 'scope:web', onlyDependOnLibsWithTags: ['type:contracts'] },
  // The command line: a client of the HTTP API, so only the shared contracts (schemas and the route table).
  { sourceTag: 'scope:cli', onlyDependOnLibsWithTags: ['type:contracts'] },
  ...['gateway', 'ingest', 'query', 'control-plane', 'export-worker', 'audit', 'agent-server'].map((scope) => ({
    sourceTag: `scope:${scope}`,
    onlyDependOnLibsWithTags: [`scope:${scope}`, 'scope:shared'],
  })),
  { sourceTag: 'scope:shared', onlyDependOnLibsWithTags: ['scope:shared'] },
];
const specConstraints = depConstraints.map((c) =>
  c.sourceTag === 'type:domain' ? { ...c, onlyDependOnLibsWithTags: [...c.onlyDependOnLibsWithTags, 'type:testing'] } : c,
);
const boundaries = (constraints) => [
  'error',
  {
    enforceBuildableLibDependency: false,
    allowCircularSelfDependency: false,
    // "Lazy-loaded library" is a browser-bundle notion; Node services load every lib eagerly, and Nx
    // reports some file reads as dynamic edges, so a static import is never an error for that reason.
    checkDynamicDependenciesExceptions: ['@th/*'],
    allow: [],
    depConstraints: constraints,
  },
];

export default [
  {
    ignores: [
      '**/dist/**',
      '**/node_modules/**',
      '**/.cache/**',
      '**/.data/**',
      '**/.nx/**',
      '**/coverage/**',
      'bench/**',
    ],
  },
  {
    files: ['**/*.ts', 'apps/web/**/*.tsx'],
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: { ecmaVersion: 2022, sourceType: 'module' },
    },
    plugins: {
      '@nx': nx,
      '@typescript-eslint': tseslint.plugin,
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      '@nx/enforce-module-boundaries': boundaries(depConstraints),
      // No deep imports into a library's internals through its alias; and no path into apps/, libs/ or dist/ from
      // anywhere, including tools/, which belongs to no Nx project and so is skipped by the Nx rule.
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^@th/[^/]+/',
              message: 'Import a library only through its public entry point @th/<lib> (libs/<lib>/src/index.ts), never a deep path.',
            },
            {
              regex: '^(\\.\\.?/)+(apps|libs|dist)/',
              message: 'Import libraries through their @th/<lib> alias, never by a path into apps/, libs/ or dist/.',
            },
          ],
        },
      ],
      '@typescript-eslint/no-require-imports': 'error',
      // Unused locals are errors; callback parameters (e.g. forEach((r, i) => ...)) are not.
      '@typescript-eslint/no-unused-vars': [
        'error',
        { args: 'none', argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
    },
  },
  {
    // A focused test silently skips the rest of the suite, and a disabled one stops proving anything: neither is committed.
    files: ['**/*.spec.ts', '**/*.spec.tsx', 'apps/*/src/testing/**/*.ts', 'libs/testing/src/**/*.ts'],
    rules: {
      'no-restricted-properties': [
        'error',
        ...['it', 'test', 'describe'].flatMap((object) =>
          ['only', 'skip', 'todo'].map((property) => ({ object, property, message: `${object}.${property} focuses or disables tests: run one with \`npx jest <file> -t <name>\` instead.` })),
        ),
      ],
      'no-restricted-syntax': [
        'error',
        {
          selector: 'CallExpression[callee.name=/^(fit|fdescribe|ftest|xit|xdescribe|xtest)$/]',
          message: 'Focused (f*) and disabled (x*) tests are not committed: run one with `npx jest <file> -t <name>` instead.',
        },
      ],
    },
  },
  {
    files: ['**/*.spec.ts'],
    rules: { '@nx/enforce-module-boundaries': boundaries(specConstraints) },
  },
  {
    files: ['libs/*/src/**/*.ts'],
    ignores: ['**/*.spec.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
    },
  },
];
