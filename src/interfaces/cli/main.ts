import { Command, CommanderError, Option } from 'commander';
import { toGafferError } from '../../domain/errors.js';
import { CliContext } from './cli-context.js';
import { dispatchCommand, type DispatchFlags } from './commands/dispatch.js';
import { cancelCommand, eventsCommand, listCommand, statusCommand, waitCommand } from './commands/reading.js';

const collect = (value: string, previous: string[] = []) => [...previous, value];

/** Exit codes of spec 02 for a refusal, per command: dispatch/wait/status → 2; cancel of a final job → 1. */
function exitCodeFor(command: string, code: string): number {
  if (command === 'cancel' && code === 'conflict') return 1;
  return 2;
}

/** Builds the `gaffer` program; each action resolves to its exit code. */
export function buildProgram(setExit: (code: number) => void): Command {
  const program = new Command('gaffer')
    .description('Hand coding work to workers and know, for certain, what they did.')
    .option('--data-dir <dir>', 'data dir (env GAFFER_DATA_DIR; default: the platform user-data dir)')
    .option('--json', 'print the exact JSON answer on stdout')
    .showHelpAfterError()
    .exitOverride();

  const run = (name: string, action: (cli: CliContext) => Promise<number>) => async () => {
    const globals = program.opts<{ dataDir?: string; json?: boolean }>();
    const cli = new CliContext(globals);
    try {
      setExit(await action(cli));
    } catch (err) {
      const error = toGafferError(err);
      if (cli.json) cli.err(JSON.stringify(error.toBody()));
      else cli.err(`gaffer ${name}: ${error.message}${error.field ? ` [${error.code}, field ${error.field}]` : ` [${error.code}]`}`);
      setExit(exitCodeFor(name, error.code));
    } finally {
      await cli.close();
    }
  };

  program
    .command('dispatch')
    .description('submit a job (request file, - for stdin, or flags) and run it in this process until it ends')
    .argument('[file]', 'a JSON or YAML request; - reads stdin')
    .option('--workspace <dir>', 'the folder the workers work in')
    .option('--task <instruction>', 'a task (repeatable)', collect)
    .option('--name <name>', 'name of the task(s) given by flags')
    .option('--files <path>', "the task's files (repeatable)", collect)
    .option('--command <cmd>', 'shell runner: the command the task runs')
    .option('--runner <key>', 'runner for every task (shell)')
    .option('--model <model>', 'model for every task')
    .option('--title <text>', 'job title')
    .option('--context <text>', 'shared text every worker gets')
    .option('--parallel', 'run tasks at once up to the worker cap')
    .option('--verify <cmd>', 'auto | none | a command that proves the work')
    .addOption(new Option('--verify-scope <scope>', 'related | all').choices(['related', 'all']))
    .option('--verify-timeout-s <n>', 'verification timeout, 10..3600')
    .option('--fix-rounds <n>', 'fix rounds after a failed verification, 0..4')
    .option('--expect <text>', 'expected_output_contains: a landmark the verification output must contain')
    .option('--criteria <text>', 'a job criterion (repeatable)', collect)
    .option('--timeout-s <n>', 'per-worker timeout, 10..86400')
    .option('--max-rounds <n>', 'agent rounds per worker, 1..200')
    .option('--isolation <mode>', 'shared | worktree')
    .option('--approval <mode>', 'auto | required | never')
    .option('--idempotency-key <key>', 'the same key within an hour returns the first job')
    .option('--wait', 'wait for the end (in-process dispatch always waits)')
    .action((file: string | undefined, flags: DispatchFlags) => run('dispatch', (cli) => dispatchCommand(cli, file, flags))());

  program
    .command('status')
    .description('the compact answer of a job')
    .argument('<job>')
    .option('--full', "every worker's full report")
    .action((id: string, flags: { full?: boolean }) => run('status', (cli) => statusCommand(cli, id, flags))());

  program
    .command('wait')
    .description('block until a condition holds: done | phase:<text> | event:<text> | worker:<name|*>:<state>')
    .argument('<job>')
    .option('--for <condition>', 'the condition (default done)')
    .option('--timeout-s <n>', 'give up after N seconds (default 600)')
    .action((id: string, flags: { for?: string; timeoutS?: string }) => run('wait', (cli) => waitCommand(cli, id, flags))());

  program
    .command('events')
    .description("a job's events")
    .argument('<job>')
    .option('--follow', 'stream until the job ends')
    .action((id: string, flags: { follow?: boolean }) => run('events', (cli) => eventsCommand(cli, id, flags))());

  program
    .command('cancel')
    .description('cancel a job (its evidence is still reported)')
    .argument('<job>')
    .action((id: string) => run('cancel', (cli) => cancelCommand(cli, id))());

  program
    .command('list')
    .description('recent jobs, newest first')
    .option('--limit <n>', 'how many (default 20)')
    .option('--status <status>', 'only jobs in this status')
    .action((flags: { limit?: string; status?: string }) => run('list', (cli) => listCommand(cli, flags))());

  return program;
}

async function main(argv: string[]): Promise<void> {
  let exitCode = 0;
  const program = buildProgram((code) => (exitCode = code));
  try {
    await program.parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version exit 0; misuse is 2 (spec 02)
      process.exitCode = err.exitCode === 0 ? 0 : 2;
      return;
    }
    throw err;
  }
  process.exitCode = exitCode;
}

await main(process.argv);
