import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { CompactJob } from '../../src/engine/queries/compact.js';
import { Engine } from '../../src/engine/engine.js';
import { probeSandbox } from '../../src/platform/sandbox/probe.js';
import { findSandboxRefusals } from '../../src/verification/sandbox-refusals.js';
import { makeWorkspace, tempDir } from '../helpers/temp.js';
import { verificationOf } from '../helpers/answer.js';

const probe = probeSandbox();
const SKIP = probe.available ? '' : ` — SKIPPED: bubblewrap does not work here (${probe.reason})`;

describe('findSandboxRefusals', () => {
  it('reads the paths from node, sh, coreutils, Python and go, outside the workspace only', () => {
    const output = [
      "Error: EROFS: read-only file system, open '/usr/lib/.node-spawn-wrap-12-ab'",
      'sh: 1: cannot create /etc/gaffer-x: Read-only file system',
      "touch: cannot touch '/var/lib/y': Read-only file system",
      "OSError: [Errno 30] Read-only file system: '/opt/z'",
      'open /srv/go/w: read-only file system',
      "Error: EROFS: read-only file system, open '/ws/inside.txt'",
      'all fine: /usr/other is not mentioned with a refusal',
    ].join('\n');
    expect(findSandboxRefusals(output, '/ws')).toEqual([
      '/usr/lib/.node-spawn-wrap-12-ab',
      '/etc/gaffer-x',
      '/var/lib/y',
      '/opt/z',
      '/srv/go/w',
    ]);
    expect(findSandboxRefusals('1 passing\n', '/ws')).toEqual([]);
  });
});

describe.skipIf(!probe.available)(`a write the sandbox refused is named as the cause${SKIP}`, () => {
  const engines: Engine[] = [];
  afterEach(async () => {
    await Promise.all(engines.splice(0).map((e) => e.close()));
  });

  it('a sandboxed verification that fails because a write was refused says so in its summary and sandbox_refused', async () => {
    const engine = await Engine.open({ dataDir: join(tempDir('gaffer-data-'), 'data') });
    engines.push(engine);
    const ws = makeWorkspace({ 'a.txt': 'a\n' });
    const target = `/usr/gaffer-refused-${process.pid}`;
    const { job } = engine.submit({
      workspace: ws,
      verify: `node -e "require('fs').writeFileSync('${target}', 'x')"`,
      fix_rounds: 0,
      tasks: [{ instruction: 'edit', command: 'echo b > b.txt' }],
    });
    await engine.settled(job.id);
    const final: CompactJob = engine.get(job.id, { full: true });
    const verification = verificationOf(final);
    expect(verification).toMatchObject({ ran: true, ok: false, sandbox_refused: [target] });
    expect(verification.summary).toContain(`the sandbox refused a write to ${target}`);
  }, 60_000);
});
