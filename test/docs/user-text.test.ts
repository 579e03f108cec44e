import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

// What gaffer says to its users — its --help texts and the messages in its code — cites no spec or
// issue by number: those documents do not ship with gaffer. It says the thing, or names a docs page.
const root = resolve(import.meta.dirname, '../..');
const BIN = join(root, 'bin', 'gaffer');
const CITATION = /\b(?:specs?|issues?)\s+#?\d{2}\b/i;

/**
 * Every command's `--help` text, by its command line (`gaffer queue run`), from the built CLI
 * (npm run build). One process renders them all with commander's own `outputHelp`, as `--help`
 * does: some 30 processes of `gaffer … --help` take half a minute of CPU here. Importing main.js
 * runs the CLI once, so it is given `--version`, which only prints the version.
 */
function renderHelpTexts(): Record<string, string> {
  const script = `
    const main = process.argv[1];
    process.argv = [process.argv[0], 'gaffer', '--version'];
    const { buildProgram } = await import(main);
    const texts = {};
    const walk = (command, path) => {
      let out = '';
      command.configureOutput({ writeOut: (s) => (out += s), writeErr: (s) => (out += s) });
      command.outputHelp();
      texts[path.join(' ')] = out;
      for (const sub of command.commands) walk(sub, [...path, sub.name()]);
    };
    walk(buildProgram(() => {}), ['gaffer']);
    process.stdout.write('\\n' + JSON.stringify(texts) + '\\n');
  `;
  const main = pathToFileURL(join(root, 'dist/interfaces/cli/main.js')).href;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script, main], {
    encoding: 'utf8',
    timeout: 60_000,
    env: { ...process.env, GAFFER_URL: '' },
  });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout.trim().split('\n').at(-1) ?? '{}') as Record<string, string>;
}

/** Every TypeScript file under a folder. */
function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.tsx?$/.test(entry.name) ? [path] : [];
  });
}

/** The text of every string and template literal in a file, with its line; comments are not literals. */
function literalsOf(file: string): { line: number; text: string }[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const found: { line: number; text: string }[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isStringLiteralLike(node) || ts.isTemplateLiteralToken(node)) {
      found.push({ line: source.getLineAndCharacterOfPosition(node.getStart()).line + 1, text: node.text });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe('what gaffer says to its users', () => {
  it("gaffer --help and every subcommand's --help cite no spec or issue by number", () => {
    const texts = renderHelpTexts();
    // the walk reached the commands, nested ones included, and renders what `--help` prints
    expect(Object.keys(texts)).toEqual(
      expect.arrayContaining([
        'gaffer',
        'gaffer dispatch',
        'gaffer wait',
        'gaffer queue run',
        'gaffer worktrees prune',
        'gaffer node',
      ]),
    );
    const printed = spawnSync(BIN, ['wait', '--help'], {
      encoding: 'utf8',
      timeout: 60_000,
      env: { ...process.env, GAFFER_URL: '' },
    });
    expect(printed.stdout).toBe(texts['gaffer wait']);
    const citing = Object.entries(texts)
      .filter(([, help]) => CITATION.test(help))
      .map(([command, help]) => `${command} --help: ${CITATION.exec(help)?.[0]}`);
    expect(citing).toEqual([]);
  });

  it('no string in src/ (messages, errors, descriptions) cites a spec or issue by number', () => {
    const citing = sourceFiles(join(root, 'src')).flatMap((file) =>
      literalsOf(file)
        .filter((literal) => CITATION.test(literal.text))
        .map((literal) => `${relative(root, file)}:${literal.line}: ${literal.text.slice(0, 120)}`),
    );
    expect(citing).toEqual([]);
  });

  it('every spec and issue number the code cites is mapped in docs/design-references.md', () => {
    const page = readFileSync(join(root, 'docs/design-references.md'), 'utf8');
    const mapped = (heading: string) =>
      new Set(
        [...(page.split(`## ${heading}\n`)[1]?.split(/^## /m)[0] ?? '').matchAll(/^\| (\d{2}) \|/gm)].map((m) => m[1]),
      );
    const specs = mapped('Specs');
    const issues = mapped('Issues');
    expect(specs.size).toBeGreaterThan(5);
    const files = ['src', 'board/src', 'test'].flatMap((dir) => sourceFiles(join(root, dir)));
    // each unmapped number once, with the first file that cites it
    const unmapped = new Map<string, string>();
    for (const file of files) {
      for (const m of readFileSync(file, 'utf8').matchAll(/\b(spec|issue)s?\s+(\d{2})\b/gi)) {
        const [, kind = '', number = ''] = m;
        const citation = `${kind.toLowerCase()} ${number}`;
        if (!(kind.toLowerCase() === 'spec' ? specs : issues).has(number) && !unmapped.has(citation))
          unmapped.set(citation, relative(root, file));
      }
    }
    expect([...unmapped].map(([citation, file]) => `${citation} (${file})`)).toEqual([]);
  });

  it('finds a citation where one is', () => {
    expect(CITATION.test('the job request (spec 02)')).toBe(true);
    expect(CITATION.test('issue 33: known failures')).toBe(true);
    expect(CITATION.test('spec lint of a request')).toBe(false);
  });
});
