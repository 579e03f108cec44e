// Issue 33: the runner behind a package's test script, and auto mode running it without the script's lint,
// type-check and audit steps. The package.json shapes are those of real packages on npm.
import { chmodSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { detectTestCommand } from '../../src/verification/detect.js';
import { readRun } from '../../src/verification/judge.js';
import {
  adviceForCommand,
  conclusiveAdvice,
  frameworkBehindCommand,
  readTestScript,
  testsOnlyCommand,
} from '../../src/verification/npm-script.js';
import { runSuite } from '../../src/verification/run-suite.js';
import { makeWorkspace, tempDir } from '../helpers/temp.js';

const pkg = (scripts: Record<string, string>) => JSON.stringify({ name: 'x', version: '1.0.0', scripts });

// minimist, qs, object-inspect… (ljharb's packages): lint before, an audit after, the tests under coverage
const LJHARB = pkg({
  lint: 'eslint --ext=js,mjs .',
  pretest: 'npm run lint',
  'tests-only': "nyc tape 'test/**/*.js'",
  test: 'npm run tests-only',
  posttest: 'aud --production',
});

describe('readTestScript', () => {
  it('follows npm run references and the pre/post scripts npm runs around them', () => {
    expect(readTestScript(LJHARB)).toEqual({
      framework: 'tape',
      runnerSteps: ["nyc tape 'test/**/*.js'"],
      otherSteps: [
        { step: 'eslint --ext=js,mjs .', what: 'lint' },
        { step: 'aud --production', what: 'audit' },
      ],
      testsOnly: "nyc tape 'test/**/*.js'",
      leftOut: ['lint: eslint --ext=js,mjs .', 'audit: aud --production'],
    });
  });

  it.each([
    [
      { test: 'npm run lint && npm run tests-only', lint: 'eslint .', 'tests-only': "nyc tape 'test/**/*.js'" },
      'tape',
      "nyc tape 'test/**/*.js'",
      ['lint: eslint .'],
    ],
    [{ test: 'standard && tape test/*.js' }, 'tape', 'tape test/*.js', ['lint: standard']],
    [{ test: 'tsc --noEmit && jest' }, 'jest', 'jest', ['type-check: tsc --noEmit']],
    [{ test: 'npm audit --production; vitest run' }, 'vitest', 'vitest run', ['audit: npm audit --production']],
    [{ test: 'xo && tsd && c8 ava' }, 'ava', 'c8 ava', ['lint: xo', 'type-check: tsd']],
    [
      { test: 'prettier --check . && cross-env NODE_ENV=test mocha' },
      'mocha',
      'cross-env NODE_ENV=test mocha',
      ['lint: prettier --check .'],
    ],
    [
      { test: 'pnpm lint && pnpm test:unit', lint: 'biome check .', 'test:unit': 'node --test' },
      'node-test',
      'node --test',
      ['lint: biome check .'],
    ],
    [
      { test: 'yarn run lint && istanbul cover _mocha', lint: 'eslint .' },
      'mocha',
      'istanbul cover _mocha',
      ['lint: eslint .'],
    ],
    // a script named for a lint is one, whatever it runs
    [{ test: 'npm run lint && mocha', lint: 'node scripts/lint.js' }, 'mocha', 'mocha', ['lint: node scripts/lint.js']],
    [
      { test: 'npm run typecheck && npm run security && ava', typecheck: 'node tc.js', security: 'snyk test' },
      'ava',
      'ava',
      ['type-check: node tc.js', 'audit: snyk test'],
    ],
  ])('%j runs %s alone as `%s`', (scripts, framework, testsOnly, leftOut) => {
    expect(readTestScript(pkg(scripts))).toMatchObject({ framework, testsOnly, leftOut });
  });

  it.each([
    ['mocha', 'mocha'],
    ['vitest run', 'vitest'],
    ['node --test', 'node-test'],
    ['jest --coverage', 'jest'],
  ])('"%s" is its runner alone: nothing to leave out', (test, framework) => {
    expect(readTestScript(pkg({ test }))).toEqual({
      framework,
      runnerSteps: [test],
      otherSteps: [],
      testsOnly: null,
      leftOut: [],
    });
  });

  it('keeps build steps: a test may run what the build wrote (an emitting `tsc` is a build)', () => {
    expect(readTestScript(pkg({ test: 'tsc && jest' }))).toMatchObject({
      framework: 'jest',
      otherSteps: [{ step: 'tsc', what: 'other' }],
      testsOnly: null,
      leftOut: [],
    });
    const built = readTestScript(
      pkg({
        pretest: 'npm run lint',
        lint: 'xo',
        test: 'npm run build && npm run unit',
        build: 'tsc -p .',
        unit: 'cd packages/core && mocha',
      }),
    );
    // a referenced script runs in a shell of its own: its `cd` stays inside it
    expect(built).toMatchObject({
      framework: 'mocha',
      testsOnly: 'tsc -p . && ( cd packages/core && mocha )',
      leftOut: ['lint: xo'],
    });
  });

  it('a script named lint that runs tests too is no lint', () => {
    expect(readTestScript(pkg({ test: 'npm run lint', lint: 'eslint . && mocha' }))).toMatchObject({
      framework: 'mocha',
      testsOnly: 'mocha',
      leftOut: ['lint: eslint .'],
    });
  });

  it('keeps the operator before each step it keeps', () => {
    expect(readTestScript(pkg({ test: 'eslint . && tape test/*.js || exit 1' }))?.testsOnly).toBe(
      'tape test/*.js || exit 1',
    );
    expect(readTestScript(pkg({ test: 'tape test/*.js; eslint .' }))?.testsOnly).toBe('tape test/*.js');
    expect(readTestScript(pkg({ test: "eslint .; tsc; mocha --grep 'a ; b'" }))?.testsOnly).toBe(
      "tsc; mocha --grep 'a ; b'",
    );
    // `&&` inside quotes is an argument, not a step
    expect(readTestScript(pkg({ test: `eslint . && mocha --grep 'a && b'` }))?.testsOnly).toBe(`mocha --grep 'a && b'`);
  });

  it('a script that names no runner is not rewritten; a reference loop and a missing script are plain steps', () => {
    expect(readTestScript(pkg({ test: 'eslint . && node test.js' }))).toMatchObject({
      framework: null,
      runnerSteps: [],
      testsOnly: null,
      leftOut: ['lint: eslint .'],
    });
    expect(readTestScript(pkg({ test: 'npm run a', a: 'npm run b', b: 'npm run a && tape t.js' }))).toMatchObject({
      framework: 'tape',
      runnerSteps: ['tape t.js'],
    });
    expect(readTestScript(pkg({ test: 'npm run nowhere && tape t.js' }))).toMatchObject({
      otherSteps: [{ step: 'npm run nowhere', what: 'other' }],
      testsOnly: null,
    });
  });

  it('passes the args of a reference to the script it runs', () => {
    expect(
      readTestScript(pkg({ test: 'npm run lint && npm run unit -- --bail', lint: 'eslint .', unit: 'mocha test/' }))
        ?.testsOnly,
    ).toBe('mocha test/ --bail');
  });

  it('no test script, no JSON object: null', () => {
    expect(readTestScript(pkg({ build: 'tsc' }))).toBeNull();
    expect(readTestScript('{ not json')).toBeNull();
    expect(readTestScript('null')).toBeNull();
  });
});

describe('frameworkBehindCommand', () => {
  it.each([
    ['npm test', 'tape'],
    ['npm t', 'tape'],
    ['npm run test', 'tape'],
    ['npm run-script test -- --x', 'tape'],
    ['npm run tests-only', 'tape'],
    ['pnpm test', 'tape'],
    ['yarn test', 'tape'],
    ['bun run test', 'tape'],
    ['npm --silent test', 'tape'],
    ['npx mocha test/', 'mocha'],
    ['make check', null],
  ])('%s → %s', (command, framework) => {
    expect(frameworkBehindCommand(command, LJHARB)).toBe(framework);
  });

  it('without a manifest, or for a script it does not have, the framework the command names', () => {
    expect(frameworkBehindCommand('npm test', null)).toBeNull();
    expect(frameworkBehindCommand('npm run lint', LJHARB)).toBeNull();
    expect(frameworkBehindCommand(testsOnlyCommand('tape test/*.js'), null)).toBe('tape');
  });
});

describe('conclusiveAdvice', () => {
  it('names what else the script runs and the verify.command of .gaffer/workspace.json that runs the tests alone', () => {
    expect(conclusiveAdvice(LJHARB)).toBe(
      '`npm test` also runs lint (eslint --ext=js,mjs .) and audit (aud --production): put ' +
        `{"verify":{"command":"npm exec --offline -c \\"nyc tape 'test/**/*.js'\\""}} in .gaffer/workspace.json to verify the tests alone`,
    );
    expect(conclusiveAdvice(pkg({ test: 'standard && tape test/*.js' }))).toContain(
      `{"verify":{"command":"npm exec --offline -c 'tape test/*.js'"}}`,
    );
  });

  it('a script whose test step names no known runner still gets the steps it would keep', () => {
    expect(conclusiveAdvice(pkg({ test: 'eslint . && node test.js' }))).toBe(
      '`npm test` also runs lint (eslint .): put {"verify":{"command":"npm exec --offline -c \'node test.js\'"}} in .gaffer/workspace.json to verify the tests alone',
    );
    expect(conclusiveAdvice(pkg({ test: 'eslint .' }))).toBeNull();
  });

  it('says nothing for a script that runs only tests', () => {
    expect(conclusiveAdvice(pkg({ test: 'mocha' }))).toBeNull();
    expect(conclusiveAdvice(pkg({ test: 'tsc && jest' }))).toBeNull();
    // only a run of the test script is settled by it: an explicit pytest, or another script, gets no npm advice
    expect(adviceForCommand('npm test', pkg({ test: 'standard && tape test/*.js' }))).toContain(
      '`npm test` also runs lint',
    );
    expect(adviceForCommand('pnpm test', pkg({ test: 'standard && tape test/*.js' }))).toContain(
      '`pnpm test` also runs lint',
    );
    expect(adviceForCommand('python3 -m pytest', pkg({ test: 'standard && tape test/*.js' }))).toBeNull();
    expect(adviceForCommand('npm run lint', pkg({ test: 'standard && tape test/*.js' }))).toBeNull();
  });
});

describe('detectTestCommand: the runner behind the script', () => {
  it('carries the framework of the test script', () => {
    expect(detectTestCommand(makeWorkspace({ 'package.json': pkg({ test: 'vitest run' }) }), {})).toEqual({
      command: 'npm test',
      kind: 'node',
      mode: 'auto',
      framework: 'vitest',
    });
    expect(detectTestCommand(makeWorkspace({ 'package.json': pkg({ test: 'node scripts/test.js' }) }), {})).toEqual({
      command: 'npm test',
      kind: 'node',
      mode: 'auto',
    });
  });

  it('runs the runner alone when the script also lints or audits, and names what it left out', () => {
    expect(detectTestCommand(makeWorkspace({ 'package.json': LJHARB }), {})).toEqual({
      command: `npm exec --offline -c "nyc tape 'test/**/*.js'"`,
      kind: 'node',
      mode: 'auto',
      framework: 'tape',
      skipped: ['lint: eslint --ext=js,mjs .', 'audit: aud --production'],
    });
    expect(
      detectTestCommand(
        makeWorkspace({ 'package.json': pkg({ test: 'standard && tape test/*.js' }), 'pnpm-lock.yaml': '' }),
        {},
      ),
    ).toMatchObject({
      command: "npm exec --offline -c 'tape test/*.js'",
      skipped: ['lint: standard'],
    });
  });

  it("leaves the script whole under bun and Yarn Plug'n'Play (no node_modules/.bin to run from)", () => {
    expect(detectTestCommand(makeWorkspace({ 'package.json': LJHARB, 'bun.lock': '' }), {})).toEqual({
      command: 'bun run test',
      kind: 'node',
      mode: 'auto',
      framework: 'tape',
    });
    expect(
      detectTestCommand(makeWorkspace({ 'package.json': LJHARB, 'yarn.lock': '', '.pnp.cjs': '' }), {}),
    ).toMatchObject({ command: 'yarn test', framework: 'tape' });
  });

  it('a configured command stays exactly as given', () => {
    expect(detectTestCommand(makeWorkspace({ 'package.json': LJHARB }), { verify: { command: 'npm test' } })).toEqual({
      command: 'npm test',
      kind: 'configured',
      mode: 'configured',
    });
  });
});

describe('end to end: the detected command runs the tests without the failing lint', () => {
  it('runs the local TAP bin through npm exec, skips the lint and audit, and the TAP is parsed', async () => {
    const lint = `node -e "console.log('LINT RAN'); process.exit(1)"`;
    const ws = makeWorkspace({
      'package.json': pkg({
        lint,
        pretest: 'npm run lint',
        'tests-only': 'nyc tape test/one.js',
        test: 'npm run tests-only',
        posttest: 'aud --production',
      }),
      // stand-ins: an nyc that runs what follows it, a tape that prints tape's TAP for its argument
      'node_modules/.bin/nyc': '#!/bin/sh\nexec "$@"\n',
      'node_modules/.bin/tape': [
        '#!/usr/bin/env node',
        "console.log(['TAP version 13', '# ' + process.argv[2], 'ok 1 should be equal', 'ok 2 should be truthy', '', '1..2', '# tests 2', '# pass  2', '', '# ok'].join('\\n'));",
        '',
      ].join('\n'),
      'test/one.js': '',
    });
    for (const bin of ['nyc', 'tape']) chmodSync(join(ws, 'node_modules/.bin', bin), 0o755);
    const detected = detectTestCommand(ws, {});
    expect(detected).toEqual({
      command: "npm exec --offline -c 'nyc tape test/one.js'",
      kind: 'node',
      mode: 'auto',
      framework: 'tape',
      skipped: [`lint: ${lint}`, 'audit: aud --production'],
    });
    const run = await runSuite({
      command: detected?.command ?? '',
      cwd: ws,
      kind: 'node',
      timeoutMs: 60_000,
      signal: new AbortController().signal,
      logFile: join(tempDir('gaffer-log-'), 'v.log'),
    });
    expect(run.exitCode, run.tail).toBe(0);
    expect(run.tail).not.toContain('LINT RAN');
    expect(run.parsed).toMatchObject({
      framework: 'tape',
      passed: ['test/one.js'],
      failed: [],
      incomplete: null,
      ranSignal: true,
    });
    expect(readRun(run, { kind: 'node', timeoutS: 60, expectedOutput: null })).toMatchObject({
      ok: true,
      summary: '1 passed',
    });

    // `npm test` itself runs the failing lint first and never reaches the tests: what the verification met before
    const whole = await runSuite({
      command: 'npm test',
      cwd: ws,
      kind: 'node',
      timeoutMs: 60_000,
      signal: new AbortController().signal,
      logFile: join(tempDir('gaffer-log-'), 'w.log'),
    });
    expect(whole.exitCode).not.toBe(0);
    expect(whole.tail).toContain('LINT RAN');
    expect(whole.tail).not.toContain('TAP version 13');
  }, 120_000);
});
