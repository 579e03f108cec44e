// The allowed imports between src/'s layers (README "Architecture"): `npm run lint` fails on any
// import against this table, and on any circular import. Type-only imports count: they shape the
// architecture even though they vanish at run time.
/** Each layer and the layers of ours it may import (its own folder and src/*.ts like version.ts always). */
const ALLOWED = {
  platform: [],
  domain: [],
  evidence: ['domain', 'platform'],
  // verification runs git through evidence/git.ts and reads its change sets to judge what the workers changed
  verification: ['domain', 'platform', 'evidence'],
  runners: ['domain', 'platform'],
  store: ['domain', 'platform'],
  config: ['domain', 'platform'],
  engine: ['domain', 'platform', 'evidence', 'verification', 'runners', 'store', 'config'],
  // the CLI is the process's entry: it sets umask, held secrets and limits once at start (platform)
  interfaces: ['engine', 'domain', 'config', 'platform'],
};

/** A layer's rule: `from` files of the layer (less `except`) may import only the allowed layers (plus `also`). */
function layerRule(layer, { except, also } = {}) {
  const allowed = ALLOWED[layer];
  const ok = [`^src/(${[layer, ...allowed].join('|')})/`, '^src/[^/]+\\.ts$', ...(also ? [also] : [])];
  return {
    name: `${layer}-imports`,
    comment: `src/${layer}/ may import only ${allowed.length ? allowed.join(', ') : 'node and npm packages'} of ours (README "Architecture")`,
    severity: 'error',
    from: except ? { path: `^src/${layer}/`, pathNot: except } : { path: `^src/${layer}/` },
    to: { path: '^src/', pathNot: ok.join('|') },
  };
}

const COMPOSITION_ROOT = '^src/interfaces/cli/cli-context\\.ts$';
const RUNNER_TABLE_DOOR = '^src/interfaces/cli/api\\.ts$';

module.exports = {
  forbidden: [
    ...Object.keys(ALLOWED).filter((l) => l !== 'interfaces').map((l) => layerRule(l)),
    layerRule('interfaces', { except: `${COMPOSITION_ROOT}|${RUNNER_TABLE_DOOR}` }),
    // the composition root: the one place that picks the runner implementations the engine gets
    { ...layerRule('interfaces', { also: '^src/runners/' }), name: 'composition-root-imports', from: { path: COMPOSITION_ROOT } },
    // `gaffer runners` prints the runners table (its row type)
    { ...layerRule('interfaces', { also: '^src/runners/table\\.ts$' }), name: 'runner-table-imports', from: { path: RUNNER_TABLE_DOOR } },
    {
      name: 'domain-pure',
      comment: 'domain/ is pure: no node: modules; of npm only zod (request parsing lives in domain/request.ts) and graphology (spec 07: impact is computed over the objectives graph, no I/O)',
      severity: 'error',
      from: { path: '^src/domain/' },
      to: { dependencyTypes: ['core', 'npm', 'npm-dev', 'npm-optional', 'npm-peer', 'npm-no-pkg', 'npm-unknown'], pathNot: '(^|/)node_modules/(zod|graphology|graphology-metrics)/' },
    },
    {
      name: 'no-circular',
      comment: 'a circular import is a design bug (STYLE.md)',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
