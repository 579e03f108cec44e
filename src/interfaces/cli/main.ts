import { Command, CommanderError, Option } from 'commander';
import { toGafferError } from '../../domain/errors.js';
import { CliContext, type GlobalFlags } from './cli-context.js';
import { buildRequest } from './commands/dispatch.js';
import { doctorCommand } from './commands/doctor.js';
import { mergeCommand, worktreesListCommand, worktreesPruneCommand } from './commands/worktrees.js';
import { approveCommand, asksCommand } from './commands/approve.js';
import { followUpCommand } from './commands/follow-up.js';
import { steerCommand } from './commands/steer.js';
import { queueListCommand, queueRunCommand } from './commands/queue.js';
import { mcpCommand, serveCommand, type ServeFlags } from './commands/serve.js';
import { nodeCommand, type NodeFlags } from './commands/node.js';
import { nodesCommand } from './commands/nodes.js';
import { nodesCredentialsCommand, nodesIssueCommand, nodesRevokeCommand } from './commands/node-credentials.js';
import { dispatchCommand, type DispatchFlags } from './commands/dispatch.js';
import { restrictUmask } from '../../platform/process/umask.js';
import { guardOutput } from './safe-output.js';
import { demoCommand } from './commands/demo.js';
import { packageVersion } from './package-info.js';
import { protectSecretsAtStart } from './start-secrets.js';
import {
  cancelCommand,
  eventsCommand,
  lintCommand,
  listCommand,
  runnersCommand,
  statsCommand,
  statusCommand,
  waitCommand,
} from './commands/reading.js';

const collect = (value: string, previous: string[] = []) => [...previous, value];

/** The conditions `gaffer wait --for` takes (spec 02 wait_for; parsed by engine/queries/wait.ts). */
const WAIT_CONDITIONS = [
  { form: 'done', means: 'the job is final (the default)' },
  { form: 'changed', means: 'anything in the workspace changed on disk since the wait began' },
  { form: 'phase:<text>', means: 'a job phase message containing <text> was emitted' },
  { form: 'event:<text>', means: 'any event whose values contain <text>' },
  {
    form: 'worker:<name|*>:<state>',
    means: 'that worker (* = any) entered <state>: a detected state or a worker status',
  },
] as const;

/** Exit codes of spec 02 for a refusal, per command: dispatch/wait/status → 2; cancel of a final job → 1. */
function exitCodeFor(command: string, code: string): number {
  if (command === 'cancel' && code === 'conflict') return 1;
  if ((command === 'serve' || command === 'node') && code === 'internal') return 1;
  return 2;
}

/** Builds the `gaffer` program; each action resolves to its exit code. */
export function buildProgram(setExit: (code: number) => void): Command {
  const program = new Command('gaffer')
    .description('Hand coding work to workers and know, for certain, what they did.')
    .option('--data-dir <dir>', 'data dir (env GAFFER_DATA_DIR; default: the platform user-data dir)')
    .option('--json', 'print the exact JSON answer on stdout')
    .option('--url <url>', 'a gaffer server to use (env GAFFER_URL; default: the one recorded in the data dir)')
    .option('--token <token>', 'bearer token for the server (env GAFFER_TOKEN)')
    .option('--config <file>', 'gaffer.config.json/.yaml (env GAFFER_CONFIG; default: in the data dir)')
    .version(packageVersion(), '-V, --version', 'the installed version')
    .showHelpAfterError()
    .exitOverride();

  const run = (name: string, action: (cli: CliContext) => Promise<number>) => async () => {
    const globals = program.opts<GlobalFlags>();
    // --token's fallback GAFFER_TOKEN is read before the start leaves it out of the environment
    const cli = new CliContext({ ...globals, token: globals.token || process.env.GAFFER_TOKEN });
    try {
      protectSecretsAtStart(cli);
      setExit(await action(cli));
    } catch (err) {
      const error = toGafferError(err);
      if (cli.json) cli.err(JSON.stringify(error.toBody()));
      else
        cli.err(
          `gaffer ${name}: ${error.message}${error.field ? ` [${error.code}, field ${error.field}]` : ` [${error.code}]`}`,
        );
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
    .option(
      '--repo <url>',
      "instead of --workspace: a remote git repository a cluster's nodes fetch and push to (gaffer serve --queue)",
    )
    .option('--ref <ref>', "with --repo: the branch or tag the job starts from (default the remote's HEAD)")
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
    .option(
      '--known-failure <id>',
      "a test id or glob that fails before the work and is not this job's to fix (repeatable)",
      collect,
    )
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
    .option(
      '--require <what>',
      'what exit 0 asks of the ended job: done (the default) | proved (done, and the proof is proved); waits like --wait',
    )
    .action((file: string | undefined, flags: DispatchFlags) =>
      run('dispatch', (cli) => dispatchCommand(cli, file, flags))(),
    );

  program
    .command('status')
    .description('the compact answer of a job')
    .argument('<job>')
    .option('--full', "every worker's full report")
    .action((id: string, flags: { full?: boolean }) => run('status', (cli) => statusCommand(cli, id, flags))());

  program
    .command('wait')
    .description(`block until a condition holds: ${WAIT_CONDITIONS.map((c) => c.form).join(' | ')}`)
    .argument('<job>')
    .option('--for <condition>', 'the condition (default done)')
    .addHelpText(
      'after',
      `\nConditions:\n${WAIT_CONDITIONS.map((c) => `  ${c.form.padEnd(26)} ${c.means}`).join('\n')}`,
    )
    .option('--timeout-s <n>', 'give up after N seconds (default 600)')
    .action((id: string, flags: { for?: string; timeoutS?: string }) =>
      run('wait', (cli) => waitCommand(cli, id, flags))(),
    );

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
    .command('approve')
    .description(
      'answer the approval asks of a job awaiting approval: yes to the named tasks (every open ask when none is named), --deny for no',
    )
    .argument('<job>')
    .argument('[answers...]', 'TASK=yes or TASK=no, one per task (a yes for one and a no for another in one call)')
    .option('--task <name>', 'a task to answer (repeatable)', (value: string, all: string[] = []) => [...all, value])
    .option('--deny', 'answer no')
    .option('--note <text>', 'a note kept with the answer')
    .action((id: string, answers: string[], flags: { task?: string[]; deny?: boolean; note?: string }) =>
      run('approve', (cli) => approveCommand(cli, id, { ...flags, answers }))(),
    );

  program
    .command('follow-up')
    .description(
      "send review back to a finished job's task: a new job told the comments and note, resuming the worker's session where it can",
    )
    .argument('<job>')
    .argument('<task>')
    .option('--comment <file:line:text>', 'a comment on a line (repeatable)', (value: string, all: string[] = []) => [
      ...all,
      value,
    ])
    .option('--note <text>', 'a general note on the work')
    .option('--wait', 'wait for the follow-up job to end (in process it always does)')
    .action((id: string, task: string, flags: { comment?: string[]; note?: string; wait?: boolean }) =>
      run('follow-up', (cli) => followUpCommand(cli, id, task, flags))(),
    );

  program
    .command('steer')
    .description(
      "send a message to a task of a job: a running builtin worker reads it at its next turn; agent CLIs and shell workers get it as the task's follow-up when the job ends",
    )
    .argument('<job>')
    .argument('<task>')
    .argument('<message>')
    .option('--wait', 'when it starts a follow-up job, wait for it to end (in process it always does)')
    .action((id: string, task: string, message: string, flags: { wait?: boolean }) =>
      run('steer', (cli) => steerCommand(cli, id, task, message, flags))(),
    );

  program
    .command('asks')
    .description('the open approval asks, oldest first, with how to answer each')
    .action(() => run('asks', (cli) => asksCommand(cli))());

  program
    .command('list')
    .description('recent jobs, newest first')
    .option('--limit <n>', 'how many (default 20)')
    .option('--status <status>', 'only jobs in this status')
    .action((flags: { limit?: string; status?: string }) => run('list', (cli) => listCommand(cli, flags))());

  program
    .command('lint')
    .description('spec lint of a request, without dispatching (exit 1 when it finds gaps)')
    .argument('[file]', 'a JSON or YAML request; - reads stdin')
    .option('--workspace <dir>', 'the workspace (with --task)')
    .option('--task <instruction>', 'a task (repeatable)', collect)
    .option('--files <path>', "the task's files (repeatable)", collect)
    .option('--command <cmd>', 'shell runner: the command the task runs (as dispatch)')
    .option('--runner <key>', 'runner for every task (as dispatch)')
    .option('--verify <cmd>', 'the verification command')
    .action((file: string | undefined, flags: DispatchFlags) =>
      run('lint', (cli) => lintCommand(cli, buildRequest(file, flags)))(),
    );

  const queue = program
    .command('queue')
    .description(
      'a folder of task records, one JSON file a task: ground each, route it, send the grounded ones as one job (one batch of asks), write each status back (see docs/queue.md)',
    );
  queue
    .command('run')
    .description(
      'dispatch the open records of DIR (default ./dispatch) as one job; held or ungrounded ones get their gaps written back',
    )
    .argument('[dir]')
    .option('--workspace <dir>', 'the workspace the tasks run in (default the current directory)')
    .option(
      '--wait',
      "wait for the job and write each record's final status and attempts (always so with no server: the job runs in this process)",
    )
    .addHelpText(
      'after',
      [
        '',
        'Before dispatching, each "dispatched" record whose job has ended since is collected: its status, gaps and',
        'attempts are written back as --wait would have written them, and its line says "collected".',
        'A "returned" record is sent again only once it was edited (delete its "status" to send it as it is).',
        '',
        'Exit codes:',
        '  0  every record whose end this run wrote back (waited for, or collected) ended done, or none ended',
        '  1  a record whose end this run wrote back ended failed, error, refused, cancelled or returned; stderr names each',
        '  2  the command was refused or could not run (the folder does not exist, the server cannot be reached)',
      ].join('\n'),
    )
    .action((dir: string | undefined, flags: { workspace?: string; wait?: boolean }) =>
      run('queue', (cli) => queueRunCommand(cli, dir, flags))(),
    );
  queue
    .command('ls', { isDefault: true })
    .description('each record with its status, its grounding gaps, and where the roster would route it')
    .argument('[dir]')
    .option(
      '--workspace <dir>',
      'the workspace whose committed gaffer.roster.json applies (default the current directory)',
    )
    .action((dir: string | undefined, flags: { workspace?: string }) =>
      run('queue', (cli) => queueListCommand(cli, dir, flags))(),
    );

  const worktrees = program
    .command('worktrees')
    .description("gaffer's worktrees and branches, one per task of a worktree job (see docs/worktrees.md)");
  worktrees
    .command('ls', { isDefault: true })
    .description('each worktree and branch with its job, state, age and size')
    .action(() => run('worktrees', (cli) => worktreesListCommand(cli))());
  worktrees
    .command('prune')
    .description('remove merged and expired worktrees (worktrees.keep_days, worktrees.max_gb) and merged branches')
    .option('--unmerged', 'also delete expired branches whose work was never merged')
    .action((flags: { unmerged?: boolean }) => run('worktrees', (cli) => worktreesPruneCommand(cli, flags))());

  program
    .command('merge')
    .description(
      "merge a worktree job's passing branches (or one task's) into the workspace, verified first: a job of its own (cancel, list, wait)",
    )
    .argument('<job>')
    .argument('[task]')
    .option('--no-wait', 'answer the merge job at once (against a server; in process it always waits)')
    .action((id: string, task: string | undefined, flags: { wait?: boolean }) =>
      run('merge', (cli) => mergeCommand(cli, id, task, flags))(),
    );

  program
    .command('runners')
    .description('what this machine can run')
    .action(() => run('runners', (cli) => runnersCommand(cli))());

  const nodes = program
    .command('nodes')
    .description(
      "a coordinator's live nodes (runners, slots, running attempts, last heartbeat) and each runner queue's depth and oldest wait (exit 1 when degraded)",
    )
    .action(() => run('nodes', (cli) => nodesCommand(cli))());
  nodes
    .command('issue')
    .description(
      "a coordinator's: issues node NAME its own credential (printed once; the data dir keeps only its digest); a credential NAME had is revoked by it",
    )
    .argument('<name>', "the node's name (its gaffer node takes it from the credential)")
    .action((name: string) => run('nodes issue', (cli) => nodesIssueCommand(cli, name))());
  nodes
    .command('revoke')
    .description("a coordinator's: revokes node NAME's credential; the coordinator refuses it from its next request on")
    .argument('<name>')
    .action((name: string) => run('nodes revoke', (cli) => nodesRevokeCommand(cli, name))());
  nodes
    .command('credentials')
    .description("a coordinator's node credentials: each node's name, when it was issued, and whether it was revoked")
    .action(() => run('nodes credentials', (cli) => nodesCredentialsCommand(cli))());

  program
    .command('stats')
    .description(
      'acceptance rate (gates passed / outcomes) per task type and model, from the outcome log; recent job counts',
    )
    .action(() => run('stats', (cli) => statsCommand(cli))());

  program
    .command('doctor')
    .description(
      'the effective config with where each value came from, and checks of git, SQLite, the data dir, runners, the sandbox and model endpoints (exit 1 when one fails)',
    )
    .option('--workspace <dir>', "also read this workspace's .gaffer/workspace.json hints")
    .action((flags: { workspace?: string }) => run('doctor', (cli) => doctorCommand(cli, flags))());

  program
    .command('serve')
    .description('the HTTP API, live events and MCP over HTTP')
    .option('--host <host>', 'bind address (default 127.0.0.1; anything else needs tokens)')
    .option('--port <port>', 'port (default 7070; 0 picks a free one)')
    .option(
      '--queue <url>',
      'be the coordinator of a cluster on this Redis (redis://host:6379): attempts run on `gaffer node`s',
    )
    .option(
      '--runner-limit <runner=N>',
      'with --queue: at most N attempts of the runner at once across the cluster (repeatable)',
      collect,
    )
    .option(
      '--queue-prefix <name>',
      "with --queue: this cluster's namespace on the Redis (default gaffer; one coordinator per namespace, its nodes name the same)",
    )
    .option(
      '--entry-ttl-s <n>',
      'with --queue: seconds an attempt may wait on the queue for a node before it runs nothing (default 86400)',
    )
    .option(
      '--advertise-url <url>',
      'with --queue: the address nodes reach this coordinator at (default the one it listens on; needed with --host 0.0.0.0)',
    )
    .action((flags: ServeFlags) => run('serve', (cli) => serveCommand(cli, flags))());

  program
    .command('node')
    .description(
      "a worker node of a coordinator's cluster (see docs/cluster.md): runs its attempts, sends the work back as git commits",
    )
    .option('--queue <url>', 'the Redis the coordinator uses (redis://host:6379)')
    .option('--runners <keys>', 'the runners this node takes attempts for, comma-separated (default shell,builtin)')
    .option('--slots <n>', 'attempts of each runner at once on this node (default workers.max_parallel)')
    .option('--work-dir <dir>', 'caches, worktrees and logs (default <data dir>/node)')
    .option('--name <name>', "this node's name: the one its credential names (default: taken from the credential)")
    .option(
      '--token-file <file>',
      "a file holding this node's own credential, NAME.SECRET, from `gaffer nodes issue NAME` on the coordinator (default env GAFFER_NODE_TOKEN)",
    )
    .option(
      '--coordinator <url>',
      "the coordinator's HTTP address, when the one it advertises is not reachable from here",
    )
    .option('--stall-s <n>', 'seconds this node may go silent before its work is given to another node (default 30)')
    .option('--queue-prefix <name>', "the coordinator's namespace on the Redis (its --queue-prefix; default gaffer)")
    .action((flags: NodeFlags) => run('node', (cli) => nodeCommand(cli, flags))());

  program
    .command('login')
    .description(
      "a new one-time login URL for the board of this data dir's server (the one `gaffer serve` printed works once)",
    )
    .action(() =>
      run('login', async (cli) => {
        const { url } = await (await cli.api()).login();
        cli.out(cli.json ? JSON.stringify({ url }) : url);
        return 0;
      })(),
    );

  program
    .command('demo')
    .description(
      'a real dispatch end to end on a copy of a tiny example project, in a temp dir: shows what an answer looks like',
    )
    .action(() => run('demo', () => demoCommand())());

  program
    .command('mcp')
    .description('the MCP server on stdio')
    .action(() => run('mcp', (cli) => mcpCommand(cli))());

  return program;
}

async function main(argv: string[]): Promise<void> {
  // before anything is created: gaffer's own files are 0600/0700; workers still get the user's umask (umask.ts)
  restrictUmask();
  guardOutput();
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
