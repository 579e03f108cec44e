import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { findValueSpans, readEnvStart } from '../../src/platform/process/scrub-env.js';

const DIST_SCRUB = join(import.meta.dirname, '..', '..', 'dist', 'platform', 'process', 'scrub-env.js');

describe('the env block scrub', () => {
  it('finds the value bytes of whole NAME= entries only, every occurrence', () => {
    const block = Buffer.from('A=1\0SECRET=abc\0XSECRET=keep\0SECRET_NOT=keep\0SECRET=def\0EMPTY=\0SECRET\0', 'latin1');
    const spans = findValueSpans(block, new Set(['SECRET', 'EMPTY']));
    expect(spans.map(([from, to]) => block.toString('latin1', from, to))).toEqual(['abc', 'def']);
  });

  it('reads env_start past a comm that holds spaces and parentheses', () => {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    const start = readEnvStart(stat);
    expect(start).toBeGreaterThan(0);
    const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    expect(readEnvStart(stat.replace(`(${comm})`, '(a) (b c)'))).toBe(start);
    expect(() => readEnvStart('1 (x) S 1')).toThrow(/field 50/);
  });

  it('a process that held its secrets shows none of them in /proc/<pid>/environ, and still reads them from memory', async () => {
    const script = `
      const { holdEnvSecrets, readHeldEnv } = await import(${JSON.stringify(DIST_SCRUB)});
      const s = holdEnvSecrets(['MY_SECRET', 'OTHER_SECRET', 'NOT_SET']);
      process.stdout.write(JSON.stringify({ ...s, env: process.env.MY_SECRET ?? null, held: readHeldEnv('MY_SECRET') }) + '\\n');
      setTimeout(() => {}, 30000);`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      env: {
        PATH: process.env.PATH,
        MY_SECRET: 'planted-value-123456',
        OTHER_SECRET: 'second-planted-7890',
        KEEP: 'kept-value',
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      const line = await new Promise<string>((resolve, reject) => {
        let out = '';
        child.stdout.on('data', (d: Buffer) => {
          out += d.toString();
          if (out.includes('\n')) resolve(out);
        });
        child.once('exit', (code) => reject(new Error(`exited ${code}: ${out}`)));
      });
      const report = JSON.parse(line) as { wiped: boolean; held: string; env: string | null; reason: string | null };
      expect(report).toMatchObject({ wiped: true, reason: null, env: null, held: 'planted-value-123456' });
      const environ = readFileSync(`/proc/${child.pid}/environ`, 'latin1');
      expect(environ).toContain('KEEP=kept-value');
      expect(environ).not.toContain('planted');
      expect(environ).toContain('MY_SECRET=\0');
    } finally {
      child.kill('SIGKILL');
    }
  });
});
