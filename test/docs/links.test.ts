import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

// The README and every page of docs/: their links into the repository resolve, and they cite no
// document a reader does not have (the specs, the issue tracker).
const root = resolve(import.meta.dirname, '../..');
const pages = [
  join(root, 'README.md'),
  ...readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => join(root, 'docs', f)),
];

/** The text a reader sees as prose: fenced code blocks and inline code spans removed. */
function prose(text: string): string {
  return text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/`+[^`\n]*`+/g, '');
}

/** Every link target: inline `[text](target "title")` and reference definitions `[id]: target`. */
function linkTargets(text: string): string[] {
  const body = prose(text);
  const inline = [...body.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1] ?? '');
  const defs = [...body.matchAll(/^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm)].map((m) => m[1] ?? '');
  return [...inline, ...defs];
}

/** GitHub's anchors for a page's headings (lower case, punctuation dropped, spaces to hyphens; repeats numbered). */
function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of prose(text).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = (m[1] ?? '')
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

const isRelative = (target: string) => !/^[a-z][a-z0-9+.-]*:/i.test(target) && !target.startsWith('//');

describe('README.md and docs/*.md', () => {
  it('has pages to check, and docs/README.md lists every one of docs/', () => {
    expect(pages.length).toBeGreaterThan(5);
    const listed = new Set(linkTargets(readFileSync(join(root, 'docs/README.md'), 'utf8')).map((t) => t.split('#')[0]));
    const unlisted = pages.filter(
      (p) =>
        dirname(p) === join(root, 'docs') && !p.endsWith('README.md') && !listed.has(relative(join(root, 'docs'), p)),
    );
    expect(unlisted).toEqual([]);
  });

  for (const page of pages) {
    const name = relative(root, page);
    const text = readFileSync(page, 'utf8');

    it(`${name}: every relative link points at a file (and heading) that exists`, () => {
      const broken: string[] = [];
      for (const target of linkTargets(text).filter(isRelative)) {
        const [path = '', anchor] = target.split('#', 2);
        const file = path === '' ? page : resolve(dirname(page), decodeURIComponent(path));
        if (!existsSync(file)) {
          broken.push(`${target}: no such file`);
          continue;
        }
        if (
          anchor &&
          file.endsWith('.md') &&
          !anchors(readFileSync(file, 'utf8')).has(decodeURIComponent(anchor).toLowerCase())
        ) {
          broken.push(`${target}: no heading #${anchor} in ${relative(root, file)}`);
        }
      }
      expect(broken).toEqual([]);
    });

    it(`${name}: cites no spec or issue by number`, () => {
      const citations = [...text.matchAll(/\b(?:specs?|issues?)\s+#?\d{2}\b/gi)].map(
        (m) => `line ${text.slice(0, m.index).split('\n').length}: ${m[0]}`,
      );
      expect(citations).toEqual([]);
    });
  }
});
