import { tool, type ToolSet } from 'ai';
import { z } from 'zod';
import { runCommandTool } from './command-tool.js';
import { editFileTool, grepTool, listFilesTool, readFileTool, writeFileTool } from './file-tools.js';
import type { ToolContext, ToolOutcome } from './tool-context.js';

/** The lean tool set of spec 04. */
export const TOOL_NAMES = ['read_file', 'write_file', 'edit_file', 'list_files', 'grep', 'run_command'] as const;
export type ToolName = (typeof TOOL_NAMES)[number];

/** Called around every tool run (counting, watchdog, transcript). */
export interface ToolHooks {
  onStart(name: ToolName, args: unknown): void;
  onEnd(name: ToolName, args: unknown, outcome: ToolOutcome): void;
}

/** What a tool returns to the loop: its text, and whether it worked (sent as an error result if not). */
interface ToolAnswer {
  ok: boolean;
  text: string;
}

/** Failures and refusals go back as error results (Anthropic's `is_error`), so the model sees they did not happen. */
function toModelOutput({ output }: { output: ToolAnswer }): { type: 'text' | 'error-text'; value: string } {
  return { type: output.ok ? 'text' : 'error-text', value: output.text };
}

const pathArg = z
  .string()
  .describe('A path relative to the workspace root (absolute paths must lie inside the workspace).');

/**
 * The tools, as AI SDK tools. Each answers with the text the model reads; failures and
 * refusals are error results (the model is told), never throws.
 */
export function buildTools(ctx: ToolContext, hooks: ToolHooks): ToolSet {
  const run =
    <A>(name: ToolName, call: (args: A) => ToolOutcome | Promise<ToolOutcome>) =>
    async (args: A): Promise<ToolAnswer> => {
      hooks.onStart(name, args);
      let outcome: ToolOutcome;
      try {
        outcome = await call(args);
      } catch (err) {
        outcome = { status: 'failed', text: `ERROR: ${err instanceof Error ? err.message : String(err)}` };
      }
      hooks.onEnd(name, args, outcome);
      return { ok: outcome.status === 'ok', text: outcome.text };
    };

  return {
    read_file: tool({
      description: 'Read a text file of the workspace. Optionally only lines start_line..end_line (1-based).',
      inputSchema: z.object({
        path: pathArg,
        start_line: z.number().int().min(1).optional(),
        end_line: z.number().int().min(1).optional(),
      }),
      execute: run(
        'read_file',
        (args: { path: string; start_line?: number | undefined; end_line?: number | undefined }) =>
          readFileTool(ctx, args),
      ),
      toModelOutput,
    }),
    write_file: tool({
      description:
        'Create or overwrite a file in the workspace with the given content (parent directories are created).',
      inputSchema: z.object({ path: pathArg, content: z.string() }),
      execute: run('write_file', (args: { path: string; content: string }) => writeFileTool(ctx, args)),
      toModelOutput,
    }),
    edit_file: tool({
      description:
        'Replace one exact occurrence of old_text with new_text in a file. old_text must appear exactly once (copy it from read_file, whitespace included).',
      inputSchema: z.object({ path: pathArg, old_text: z.string(), new_text: z.string() }),
      execute: run('edit_file', (args: { path: string; old_text: string; new_text: string }) =>
        editFileTool(ctx, args),
      ),
      toModelOutput,
    }),
    list_files: tool({
      description:
        'List a directory of the workspace (directories end in /). recursive lists everything below it (skipping .git and node_modules).',
      inputSchema: z.object({ path: pathArg.optional(), recursive: z.boolean().optional() }),
      execute: run('list_files', (args: { path?: string | undefined; recursive?: boolean | undefined }) =>
        listFilesTool(ctx, args),
      ),
      toModelOutput,
    }),
    grep: tool({
      description:
        'Search files under a path (default: the whole workspace) for lines matching a JavaScript regular expression. Answers path:line: text.',
      inputSchema: z.object({ pattern: z.string(), path: pathArg.optional(), ignore_case: z.boolean().optional() }),
      execute: run('grep', (args: { pattern: string; path?: string | undefined; ignore_case?: boolean | undefined }) =>
        grepTool(ctx, args),
      ),
      toModelOutput,
    }),
    run_command: tool({
      description: `Run a shell command line in the workspace root (sh -c), e.g. tests or a build. Limited to ${Math.round(ctx.commandTimeoutMs / 1000)} s; only the last ${Math.round(ctx.commandOutputBytes / 1024)} KiB of output are shown. Destructive or escaping commands (rm -rf outside the workspace, git push, sudo, …) are refused with the reason.`,
      inputSchema: z.object({ command: z.string(), timeout_s: z.number().int().min(1).optional() }),
      execute: run('run_command', (args: { command: string; timeout_s?: number | undefined }) =>
        runCommandTool(ctx, args),
      ),
      toModelOutput,
    }),
  };
}
