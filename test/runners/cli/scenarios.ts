import { join } from 'node:path';
import type { ToolCallSpec } from '../../support/model-server/index.js';

/** Per CLI: the model slug it is asked for and the tool call that writes a file with its own write tool. */
export interface CliScenario {
  key: 'claude' | 'codex' | 'gemini' | 'qwen' | 'opencode';
  model: string;
  write: (workspace: string, file: string, content: string) => ToolCallSpec;
}

export const SCENARIOS: Record<CliScenario['key'], CliScenario> = {
  claude: {
    key: 'claude',
    model: 'claude-sonnet-4-5',
    write: (ws, file, content) => ({ name: 'Write', args: { file_path: join(ws, file), content } }),
  },
  // codex offers apply_patch only for slugs in its own catalog (issue 5)
  codex: {
    key: 'codex',
    model: 'gpt-5.5',
    write: (_ws, file, content) => ({
      name: 'apply_patch',
      args: `*** Begin Patch\n*** Add File: ${file}\n${content
        .split('\n')
        .filter((l, i, all) => i < all.length - 1 || l !== '')
        .map((l) => `+${l}`)
        .join('\n')}\n*** End Patch\n`,
    }),
  },
  gemini: {
    key: 'gemini',
    model: 'gemini-2.5-pro',
    write: (ws, file, content) => ({ name: 'write_file', args: { file_path: join(ws, file), content } }),
  },
  // qwen's write_file wants an absolute path (issue 5)
  qwen: {
    key: 'qwen',
    model: 'qwen3-coder-plus',
    write: (ws, file, content) => ({ name: 'write_file', args: { file_path: join(ws, file), content } }),
  },
  opencode: {
    key: 'opencode',
    model: 'qwen3-coder',
    write: (ws, file, content) => ({ name: 'write', args: { filePath: join(ws, file), content } }),
  },
};
