import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { scanSpecialFiles } from '../../src/evidence/special-files.js';
import { tempDir } from '../helpers/temp.js';

describe('the special-file scan', () => {
  it("a folder now a file (its subfolder's path is ENOTDIR) is skipped, not an error that drops the snapshot to its slower method", async () => {
    const root = tempDir('gaffer-special-');
    mkdirSync(join(root, 'c'));
    // `a` was a folder holding `a/b`; a file of the same name took its place
    writeFileSync(join(root, 'a'), 'now a file\n');
    const found = await scanSpecialFiles(
      root,
      new Set(['', 'a', 'a/b', 'c']),
      [],
      join(tempDir('gaffer-special-cache-'), 'cache.json'),
    );
    expect(found).toEqual([]);
  });
});
