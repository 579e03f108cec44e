/**
 * The attempt's states, events and effects, and the one table that joins them (issue 12). The table
 * is data: the transition function (attempt-machine.ts), the tests and the diagram in
 * docs/architecture.md all read it, so none of them can drift from the others.
 */

/** Where an attempt is in its life. `settled` and `interrupted` are final; every other state is live. */
export const ATTEMPT_STATES = [
  'admitted',
  'awaiting_approval',
  'paused',
  'gated',
  'placed',
  'running',
  'requeued',
  'collecting',
  'verifying',
  'gated_result',
  'cancelling',
  'settled',
  'interrupted',
] as const;
export type AttemptState = (typeof ATTEMPT_STATES)[number];

/** The states an attempt never leaves. */
export const FINAL_ATTEMPT_STATES: ReadonlySet<AttemptState> = new Set(['settled', 'interrupted']);

/** What the pipeline (or the world) tells the machine happened. */
export const ATTEMPT_EVENTS = [
  'gates_passed',
  'approval_needed',
  'budget_spent',
  'refused',
  'approved',
  'approval_refused',
  'window_reset',
  'placement_acquired',
  'executor_started',
  'launch_failed',
  'batch_stopped',
  'exited',
  'limit_hit',
  'rate_limited',
  'node_lost',
  'evidence_taken',
  'outputs_missing',
  'verify_passed',
  'verify_failed_fixable',
  'verify_failed',
  'result_gates_passed',
  'result_gates_failed',
  'escalate',
  'cancel',
  'processes_gone',
  'interrupt',
] as const;
export type AttemptEventType = (typeof ATTEMPT_EVENTS)[number];

/** Work the pipeline carries out for a transition, in the row's order, feeding the results back as events. */
export const ATTEMPT_EFFECTS = [
  'check_gates',
  'ask_approval',
  'wait_for_window',
  'acquire_placement',
  'take_checkpoint',
  'start_executor',
  'stop_processes',
  'collect_evidence',
  'run_verification',
  'check_result_gates',
  'admit_fix_attempt',
  'admit_retry_attempt',
  'admit_escalation_attempt',
  'release_placement',
] as const;
export type AttemptEffect = (typeof ATTEMPT_EFFECTS)[number];

/** How a settled attempt ended: what the task's result and the worker row are read from. */
export const ATTEMPT_ENDINGS = ['finished', 'superseded', 'cancelled', 'refused', 'launch_failed'] as const;
export type AttemptEnding = (typeof ATTEMPT_ENDINGS)[number];

/** One legal transition. */
export interface AttemptRow {
  /** The state the attempt is in. */
  from: AttemptState;
  /** What happened. */
  on: AttemptEventType;
  /** The state it moves to. */
  to: AttemptState;
  /** What the pipeline does next, in order. */
  effects: readonly AttemptEffect[];
  /** Set on every row into `settled`: how the attempt ended. */
  ending?: AttemptEnding;
}

/** States in which the attempt holds (or is acquiring) its placement, so leaving them releases it. */
const HOLDS_PLACEMENT = ['gated', 'placed', 'running', 'requeued', 'collecting', 'verifying', 'gated_result'] as const;
/** States before any placement: nothing to stop, nothing to release. */
const UNPLACED = ['admitted', 'awaiting_approval', 'paused'] as const;
/** States in which a process of the attempt (its worker or its verification) may be running. */
const MAY_RUN_PROCESSES = ['placed', 'running', 'collecting', 'verifying', 'gated_result'] as const;

function fromEach(states: readonly AttemptState[], row: Omit<AttemptRow, 'from'>): AttemptRow[] {
  return states.map((from) => ({ from, ...row }));
}

/**
 * Every legal (state, event) pair. Anything not here is refused. Cancel and interrupt are drawn
 * from every live state; their effects depend only on what the state holds (see the consts above).
 */
export const ATTEMPT_TABLE: readonly AttemptRow[] = [
  // admission: the attempt's row exists; gates (route resolvable, approval, budget) come first
  { from: 'admitted', on: 'gates_passed', to: 'gated', effects: ['acquire_placement'] },
  { from: 'admitted', on: 'approval_needed', to: 'awaiting_approval', effects: ['ask_approval'] },
  { from: 'admitted', on: 'budget_spent', to: 'paused', effects: ['wait_for_window'] },
  // e.g. the route's runner is not available, a policy says no (worker status `refused`)
  { from: 'admitted', on: 'refused', to: 'settled', effects: [], ending: 'refused' },
  { from: 'awaiting_approval', on: 'approved', to: 'gated', effects: ['acquire_placement'] },
  { from: 'awaiting_approval', on: 'approval_refused', to: 'settled', effects: [], ending: 'refused' },
  { from: 'paused', on: 'window_reset', to: 'admitted', effects: ['check_gates'] },
  // placement: the workspace (shared, under its lock) now; a worktree or a remote machine later
  { from: 'gated', on: 'placement_acquired', to: 'placed', effects: ['take_checkpoint', 'start_executor'] },
  { from: 'placed', on: 'executor_started', to: 'running', effects: [] },
  { from: 'placed', on: 'launch_failed', to: 'settled', effects: ['release_placement'], ending: 'launch_failed' },
  // spec 06: a sibling of its parallel batch failed to launch; this one never will (one that runs is stopped: `exited`)
  { from: 'placed', on: 'batch_stopped', to: 'settled', effects: ['release_placement'], ending: 'launch_failed' },
  // a spawn error arrives after the executor started (Node reports it asynchronously), or the runner refused at start
  { from: 'running', on: 'launch_failed', to: 'settled', effects: ['release_placement'], ending: 'launch_failed' },
  // the process's end: its own exit (done, timeout, stalled …) or a limit the kernel or watchdog held
  { from: 'running', on: 'exited', to: 'collecting', effects: ['collect_evidence'] },
  { from: 'running', on: 'limit_hit', to: 'collecting', effects: ['collect_evidence'] },
  // spec 04: a rate limit waits and requeues the same attempt, keeping its place but not its slot
  { from: 'running', on: 'rate_limited', to: 'requeued', effects: ['wait_for_window'] },
  // spec 09: the node running it stopped answering and BullMQ gave its work to another node: one new attempt takes it over
  {
    from: 'running',
    on: 'node_lost',
    to: 'settled',
    effects: ['admit_retry_attempt', 'release_placement'],
    ending: 'superseded',
  },
  { from: 'requeued', on: 'window_reset', to: 'placed', effects: ['start_executor'] },
  { from: 'collecting', on: 'evidence_taken', to: 'verifying', effects: ['run_verification'] },
  // spec 06: exited 0 without its declared outputs — its work is missing, not wrong: a new attempt (a new session) takes over
  {
    from: 'collecting',
    on: 'outputs_missing',
    to: 'settled',
    effects: ['admit_retry_attempt', 'release_placement'],
    ending: 'superseded',
  },
  // verification off reads as passed: there is nothing that blocks (spec 03)
  { from: 'verifying', on: 'verify_passed', to: 'gated_result', effects: ['check_result_gates'] },
  // a fix round is a new attempt of the same task; it is admitted before this one lets go of the place
  {
    from: 'verifying',
    on: 'verify_failed_fixable',
    to: 'settled',
    effects: ['admit_fix_attempt', 'release_placement'],
    ending: 'superseded',
  },
  // no rounds left, or the rounds converged: the criteria are still checked, the failure stays on the result
  { from: 'verifying', on: 'verify_failed', to: 'gated_result', effects: ['check_result_gates'] },
  {
    from: 'gated_result',
    on: 'result_gates_passed',
    to: 'settled',
    effects: ['release_placement'],
    ending: 'finished',
  },
  {
    from: 'gated_result',
    on: 'result_gates_failed',
    to: 'settled',
    effects: ['release_placement'],
    ending: 'finished',
  },
  {
    from: 'gated_result',
    on: 'escalate',
    to: 'settled',
    effects: ['admit_escalation_attempt', 'release_placement'],
    ending: 'superseded',
  },
  // cancel: nothing placed → settled at once; a place but no process → evidence, then release; processes → stop them first
  ...fromEach(UNPLACED, { on: 'cancel', to: 'settled', effects: [], ending: 'cancelled' }),
  { from: 'gated', on: 'cancel', to: 'settled', effects: ['release_placement'], ending: 'cancelled' },
  {
    from: 'requeued',
    on: 'cancel',
    to: 'settled',
    effects: ['collect_evidence', 'release_placement'],
    ending: 'cancelled',
  },
  ...fromEach(MAY_RUN_PROCESSES, { on: 'cancel', to: 'cancelling', effects: ['stop_processes'] }),
  // spec 01: a cancelled job's evidence is still reported
  {
    from: 'cancelling',
    on: 'processes_gone',
    to: 'settled',
    effects: ['collect_evidence', 'release_placement'],
    ending: 'cancelled',
  },
  // gaffer stopping (or found dead at the next start): every live attempt is `interrupted`
  ...fromEach(UNPLACED, { on: 'interrupt', to: 'interrupted', effects: [] }),
  ...fromEach(['gated', 'requeued'], { on: 'interrupt', to: 'interrupted', effects: ['release_placement'] }),
  ...fromEach([...MAY_RUN_PROCESSES, 'cancelling'], {
    on: 'interrupt',
    to: 'interrupted',
    effects: ['stop_processes', 'release_placement'],
  }),
];

/** True for the states that hold their placement (used by tests and the pipeline's release checks). */
export function holdsPlacement(state: AttemptState): boolean {
  return (HOLDS_PLACEMENT as readonly AttemptState[]).includes(state) || state === 'cancelling';
}
