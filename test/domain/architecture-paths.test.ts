import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

// docs/architecture.md is true to the code (issue 34): every source file or folder it names exists,
// so a move or a rename that leaves the design document behind fails here.

const ROOT = join(import.meta.dirname, '..', '..');
const LAYERS = 'engine|domain|evidence|verification|runners|store|platform|config|interfaces';
const NAMED = new RegExp(`\`(?:src/)?((?:${LAYERS})/[\\w./-]*?)(?:\`|\\s)`, 'g');

describe('docs/architecture.md', () => {
  it('names only files and folders the source tree has', () => {
    const doc = readFileSync(join(ROOT, 'docs', 'architecture.md'), 'utf8');
    const named = [...new Set([...doc.matchAll(NAMED)].map((m) => (m[1] as string).replace(/[.,:;)]+$/, '')))];
    expect(named.length).toBeGreaterThan(20);
    const missing = named.filter((p) => !existsSync(join(ROOT, 'src', p)));
    expect(missing).toEqual([]);
  });

  it('names by their bare name only files some folder of the source tree has', () => {
    const doc = readFileSync(join(ROOT, 'docs', 'architecture.md'), 'utf8');
    const files = new Set(
      readdirSync(join(ROOT, 'src'), { recursive: true, encoding: 'utf8' }).map((p) => p.split('/').at(-1)),
    );
    const bare = [...new Set([...doc.matchAll(/`([\w-]+\.ts)`/g)].map((m) => m[1] as string))];
    expect(bare.length).toBeGreaterThan(5);
    expect(bare.filter((f) => !files.has(f))).toEqual([]);
  });
});
