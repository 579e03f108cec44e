import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RunnerInput } from '../../../src/runners/contract.js';
import type { BuiltinEndpoint } from '../../../src/runners/builtin/model.js';
import type { ModelServer } from '../../support/model-server/index.js';

/** The two wire protocols the builtin agent speaks, with the endpoint a test server gives each. */
export const APIS = [
  { api: 'openai-compatible', label: 'OpenAI-compatible' },
  { api: 'anthropic', label: 'Anthropic Messages' },
] as const;

export type ApiUnderTest = (typeof APIS)[number]['api'];

/** The scripted server as a builtin endpoint of `api`. */
export function endpointOf(server: ModelServer, api: ApiUnderTest, model = 'qwen3:8b'): BuiltinEndpoint {
  return { api, url: `${server.url}/v1`, key: 'sk-test-secret-key', model };
}

/** A temp dir removed by `cleanup()`. */
export function tempDir(prefix: string): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A runner input for a builtin worker in `workspace`, logs under `dataDir`. */
export function builtinInput(
  workspace: string,
  dataDir: string,
  overrides: Partial<RunnerInput> = {},
): RunnerInput & { lines: string[] } {
  const lines: string[] = [];
  const name = overrides.workerName ?? 'worker-1';
  return {
    jobId: 'job-1',
    workerName: name,
    attempt: 1,
    role: 'worker',
    instruction: 'Do the task.',
    workspace,
    command: null,
    model: null,
    timeoutMs: 30_000,
    maxRounds: 10,
    resume: null,
    files: [],
    sandbox: false,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dataDir },
    logFile: join(dataDir, 'job-1', `${name}.log`),
    instructionFile: join(dataDir, 'job-1', `${name}.instruction.txt`),
    signal: new AbortController().signal,
    onOutput: (chunk) => lines.push(...chunk),
    lines,
    ...overrides,
  };
}
