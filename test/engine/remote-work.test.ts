import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { credentialDigest, NODE_CREDENTIALS_FILE } from '../../src/config/node-credentials.js';
import { NodeCredentials } from '../../src/config/node-credentials.js';
import { AttemptExchange } from '../../src/engine/execution/exchange.js';
import { RemoteWork, type WorkListener } from '../../src/engine/execution/remote-work.js';
import { writeFileSync } from 'node:fs';
import { tempDir } from '../helpers/temp.js';

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

const repo = { top: '/r', prefix: '', commonDir: '/r/.git', index: '/r/.git/index', head: 'a'.repeat(40) } as never;
const work = () => new RemoteWork({ key: 'j.w.1', runner: 'shell', repo, base: 'b'.repeat(40), branch: 'gaffer/j/w' });

// spec 09: the job's events say which node took each attempt; a node's claim and the add's reply reach the coordinator on different paths
describe('remote work as the coordinator follows it', () => {
  it('a node’s claim heard before the attempt attaches is told when it attaches, and its output after that is heard', () => {
    const w = work();
    w.onTaken('n1');
    const { told, listener } = recorder();
    w.attach(listener);
    w.onProgress({ type: 'output', lines: ['hello'] });
    expect(told).toEqual(['taken n1', 'output hello']);
  });

  it('work that ended before the attempt attached is told both: who took it, then its end', () => {
    const w = work();
    w.onTaken('n2');
    w.settle({ kind: 'completed', value: {} });
    const { told, listener } = recorder();
    w.attach(listener);
    expect(told).toEqual(['taken n2', 'settled completed']);
  });

  it('after a stall, the lost node is no longer named: the next attempt is told only the node that took the work over', () => {
    const w = work();
    const first = recorder();
    w.attach(first.listener);
    w.onTaken('n1');
    w.noteStalls(1);
    w.detach();
    w.onProgress({ type: 'output', lines: ['unheard'] });
    const second = recorder();
    w.attach(second.listener);
    w.onTaken('n2');
    w.onProgress({ type: 'output', lines: ['fresh'] });
    expect(first.told).toEqual(['taken n1', 'stalled 1']);
    expect(second.told).toEqual(['taken n2', 'output fresh']);
  });
});

/** An exchange whose coordinator issued credentials to n1 and n2, with what it tells its follower written down. */
function exchange(): { ex: AttemptExchange; told: string[] } {
  const dataDir = tempDir('gaffer-exchange-');
  const nodes = ['n1', 'n2'].map((name) => ({
    name,
    digest: credentialDigest(`${name}.secret`),
    issued: new Date().toISOString(),
    revoked: null,
  }));
  writeFileSync(join(dataDir, NODE_CREDENTIALS_FILE), JSON.stringify({ v: 1, nodes }), { mode: 0o600 });
  const told: string[] = [];
  const ex = new AttemptExchange(join(dataDir, 'cluster'), new NodeCredentials(dataDir), {
    claimed: (key, node) => told.push(`claimed ${key} by ${node}`),
    progress: (key, p) => told.push(`${key} ${p.type}`),
    report: (key) => told.push(`${key} report`),
    released: (key, node, why) => told.push(`${key} released by ${node}: ${why}`),
    say: () => undefined,
  });
  const attempt = { key: 'j.w.1' } as never;
  ex.open('j.w.1', repo, 'b'.repeat(40), { runner: 'shell', expires: Date.now() + 60_000, attempt });
  return { ex, told };
}

const ONCE = 'o'.repeat(43);

// spec 09: the coordinator hands an attempt over once per offer, and hears only the claim's ticket
describe('the exchange: one claim per offer, one ticket per claim', () => {
  it('a second claim with the same one-time value (a replay) is refused, and the follower hears one claim', async () => {
    const { ex, told } = exchange();
    ex.offer('j.w.1', 'n1', ONCE);
    await ex.claim('j.w.1', { once: ONCE }, 'n1');
    await expect(ex.claim('j.w.1', { once: ONCE }, 'n1')).rejects.toThrow(/one-time value was used already/);
    expect(told).toEqual(['claimed j.w.1 by n1']);
  });

  it('another node’s claim of the offer is refused as an unknown attempt', async () => {
    const { ex, told } = exchange();
    ex.offer('j.w.1', 'n1', ONCE);
    await expect(ex.claim('j.w.1', { once: ONCE }, 'n2')).rejects.toThrow(/no live attempt offered to this node/);
    expect(told).toEqual([]);
  });

  it('once the offer is taken back (its node lost), the old claim’s ticket is refused and the new claim’s is heard', async () => {
    const { ex, told } = exchange();
    ex.offer('j.w.1', 'n1', ONCE);
    const first = await ex.claim('j.w.1', { once: ONCE }, 'n1');
    ex.withdraw('j.w.1');
    const again = 'p'.repeat(43);
    ex.offer('j.w.1', 'n2', again);
    const second = await ex.claim('j.w.1', { once: again }, 'n2');
    expect(() => ex.progress('j.w.1', first.ticket, 'n1', { type: 'output', lines: ['stale'] })).toThrow(
      /no open attempt/,
    );
    ex.progress('j.w.1', second.ticket, 'n2', { type: 'output', lines: ['fresh'] });
    expect(told).toEqual(['claimed j.w.1 by n1', 'claimed j.w.1 by n2', 'j.w.1 output']);
  });

  it('only the claiming node’s ticket renews when it was last heard: what the coordinator decides a lost node by', async () => {
    const { ex, told } = exchange();
    ex.offer('j.w.1', 'n1', ONCE);
    expect(ex.lastHeard('j.w.1')).toBeNull();
    const before = Date.now();
    const { ticket } = await ex.claim('j.w.1', { once: ONCE, stall_s: 7 }, 'n1');
    const heard = ex.lastHeard('j.w.1');
    expect(heard?.stallMs).toBe(7_000);
    expect(heard?.at).toBeGreaterThanOrEqual(before);
    await new Promise((r) => setTimeout(r, 20));
    expect(() => ex.beat('j.w.1', 'not-the-ticket', 'n1')).toThrow(/no open attempt/);
    expect(() => ex.beat('j.w.1', ticket, 'n2')).toThrow(/no open attempt/);
    expect(ex.lastHeard('j.w.1')?.at).toBe(heard?.at);
    ex.beat('j.w.1', ticket, 'n1');
    expect(ex.lastHeard('j.w.1')?.at).toBeGreaterThan(heard?.at ?? Infinity);
    ex.release('j.w.1', ticket, 'n1', 'the base could not be fetched');
    expect(told.at(-1)).toBe('j.w.1 released by n1: the base could not be fetched');
  });
});
