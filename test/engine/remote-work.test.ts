import { describe, expect, it } from 'vitest';
import { RemoteWork, type WorkListener } from '../../src/engine/execution/remote-work.js';

/** A listener that writes down what it is told, in order. */
function recorder(): { told: string[]; listener: WorkListener } {
  const told: string[] = [];
  return {
    told,
    listener: {
      taken: (node) => told.push(`taken ${node}`),
      progress: (p) => told.push(`${p.type}${p.type === 'output' ? ` ${p.lines.join('|')}` : ''}`),
      stalled: (n) => told.push(`stalled ${n}`),
      settled: (o) => told.push(`settled ${o.kind}`),
    },
  };
}

const work = () =>
  new RemoteWork({
    key: 'j.w.1',
    runner: 'shell',
    repo: { top: '/r', prefix: '', commonDir: '/r/.git', index: '/r/.git/index', head: 'a'.repeat(40) } as never,
    base: 'b'.repeat(40),
    branch: 'gaffer/j/w',
  });

// spec 09: the job's events say which node took each attempt; the node's word and the add's reply reach the coordinator on different connections
describe('remote work as the coordinator follows it', () => {
  it('a node’s taken heard before the attempt attaches is told when it attaches, and its output after that is heard', () => {
    const w = work();
    w.onProgress({ type: 'taken', node: 'n1', take: 't1' });
    const { told, listener } = recorder();
    w.attach(listener);
    w.onProgress({ type: 'output', take: 't1', lines: ['hello'] });
    expect(told).toEqual(['taken n1', 'output hello']);
  });

  it('a taken told twice for the same turn (a command Redis ran and was sent again after a restart) is heard once', () => {
    const w = work();
    const { told, listener } = recorder();
    w.attach(listener);
    w.onProgress({ type: 'taken', node: 'n1', take: 't1' });
    w.onProgress({ type: 'taken', node: 'n1', take: 't1' });
    w.onProgress({ type: 'output', take: 't1', lines: ['hello'] });
    expect(told).toEqual(['taken n1', 'output hello']);
  });

  it('work that ended before the attempt attached is told both: who took it, then its end', () => {
    const w = work();
    w.onProgress({ type: 'taken', node: 'n2', take: 't1' });
    w.settle({ kind: 'completed', value: {} });
    const { told, listener } = recorder();
    w.attach(listener);
    expect(told).toEqual(['taken n2', 'settled completed']);
  });

  it('after a stall, the lost node is no longer heard nor named: the next attempt is told only the node that took the work over', () => {
    const w = work();
    const first = recorder();
    w.attach(first.listener);
    w.onProgress({ type: 'taken', node: 'n1', take: 't1' });
    w.noteStalls(1);
    w.detach();
    w.onProgress({ type: 'output', take: 't1', lines: ['stale'] });
    const second = recorder();
    w.attach(second.listener);
    w.onProgress({ type: 'taken', node: 'n2', take: 't2' });
    w.onProgress({ type: 'output', take: 't1', lines: ['stale again'] });
    w.onProgress({ type: 'output', take: 't2', lines: ['fresh'] });
    expect(first.told).toEqual(['taken n1', 'stalled 1']);
    expect(second.told).toEqual(['taken n2', 'output fresh']);
  });
});
