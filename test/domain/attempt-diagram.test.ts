import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ATTEMPT_TABLE } from '../../src/domain/attempt-table.js';
import { DIAGRAM_BEGIN, DIAGRAM_END, drawAttemptSection } from '../../src/domain/attempt-diagram.js';

const doc = readFileSync(resolve(import.meta.dirname, '../../docs/architecture.md'), 'utf8');

function generatedBlock(): string {
  const begin = doc.indexOf(DIAGRAM_BEGIN);
  const end = doc.indexOf(DIAGRAM_END);
  expect(begin, 'docs/architecture.md has the generated block').toBeGreaterThanOrEqual(0);
  return doc.slice(begin, end + DIAGRAM_END.length);
}

describe('docs/architecture.md’s attempt diagram', () => {
  it('is the table as drawn now (redraw: npm run build && node scripts/draw-attempts.mjs)', () => {
    expect(generatedBlock()).toBe(drawAttemptSection());
  });

  it('has one arrow per table row and no other, read back from the mermaid text', () => {
    const blocks = [...generatedBlock().matchAll(/```mermaid\n([\s\S]*?)```/g)].map((m) => m[1] ?? '');
    expect(blocks).toHaveLength(2);
    for (const block of blocks) expect(block.startsWith('stateDiagram-v2\n')).toBe(true);
    const arrows = blocks
      .flatMap((b) => [...b.matchAll(/^\s+(\w+) --> (\w+): (\w+)/gm)])
      .map((m) => `${m[1] ?? ''} ${m[3] ?? ''} ${m[2] ?? ''}`);
    expect(arrows.sort()).toEqual(ATTEMPT_TABLE.map((r) => `${r.from} ${r.on} ${r.to}`).sort());
  });
});
