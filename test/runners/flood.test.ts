import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_LOG_HEAD_BYTES,
  DEFAULT_LOG_TAIL_BYTES,
  formatDroppedLine,
} from '../../src/platform/process/capped-log.js';
import { ShellRunner } from '../../src/runners/shell/shell-runner.js';
import { fixture, makeTempDir } from './helpers.js';

const MIB = 1024 * 1024;

describe('a worker that floods 100 MB', () => {
  it('costs bounded memory and leaves a capped log', { timeout: 30_000 }, async () => {
    const workspace = makeTempDir('gaffer-ws-');
    const logFile = join(makeTempDir('gaffer-data-'), 'flood.log');
    const rssBefore = process.memoryUsage.rss();
    let rssPeak = rssBefore;
    let lineCount = 0;
    const report = await new ShellRunner().run({
      jobId: 'job-flood',
      workerName: 'worker-1',
      attempt: 1,
      role: 'worker',
      instruction: 'flood',
      workspace,
      command: `node ${fixture('flood.js')} 100`,
      model: null,
      timeoutMs: 60_000,
      maxRounds: 1,
      resume: null,
      files: [],
      sandbox: false,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      logFile,
      instructionFile: join(workspace, '..', `${workspace.split('/').pop()}-instruction.md`),
      signal: new AbortController().signal,
      onOutput: (lines) => {
        lineCount += lines.length;
        if (lineCount % 20_000 < lines.length) rssPeak = Math.max(rssPeak, process.memoryUsage.rss());
      },
    });
    const rssAfter = process.memoryUsage.rss();
    expect(report.status).toBe('done');
    expect(report.durationMs).toBeLessThan(15_000);
    expect(lineCount).toBe(Math.floor((100 * MIB) / 100));
    expect(rssAfter - rssBefore).toBeLessThan(50 * MIB);
    expect(rssPeak - rssBefore).toBeLessThan(50 * MIB);

    const dropped = 100 * MIB - DEFAULT_LOG_HEAD_BYTES - DEFAULT_LOG_TAIL_BYTES;
    // 64 KiB is not a multiple of the 100-byte lines: the head ends mid-line, so the marker starts one
    const marker = `\n${formatDroppedLine(dropped)}`;
    expect(statSync(logFile).size).toBe(DEFAULT_LOG_HEAD_BYTES + DEFAULT_LOG_TAIL_BYTES + marker.length);
    const log = readFileSync(logFile, 'latin1');
    expect(log.slice(DEFAULT_LOG_HEAD_BYTES, DEFAULT_LOG_HEAD_BYTES + marker.length)).toBe(marker);
    expect(log.endsWith(`${'x'.repeat(99)}\n`)).toBe(true);
    expect(report.summary.length).toBeLessThanOrEqual(600);
    expect(report.detection).toBeNull();
  });
});
