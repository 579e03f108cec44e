/** The coordinator guide: served at GET /api/guide, as the MCP prompt and resource `gaffer://guide`. */
export const COORDINATOR_GUIDE = `# gaffer — a guide for the coordinator

You plan; gaffer's workers do the work; gaffer tells you what really happened, from what it
observed itself (the disk and the tests), never from what a worker claims.

## When to dispatch
Dispatch work that is well defined and checkable: a fix with a failing test, a mechanical change
across files, a small feature with a clear "done". Keep design decisions, ambiguous requirements and
reviews of intent to yourself. One job = one workspace; gaffer runs one job per workspace at a time.

## How to write a task
- Self-contained: the worker has not seen your conversation. Say the goal and why in two lines.
- One outcome per task. Several deliverables → several tasks (\`parallel: true\` when independent).
- Name the files (\`files\`) and symbols it is about; say what NOT to touch ("do not change the
  exported signatures", "leave tests as they are").
- Give the exact command that proves it as \`verify\` (e.g. \`npm test -- api\`). With \`verify: "auto"\`
  gaffer runs the project's suite as a regression check: only NEW failures block. An explicit
  command is the task's proof: any failure of it blocks, also one that failed before.
- Add \`criteria\` (job or task) in forms gaffer checks: "\`npm run lint\` passes", "src/api.ts must not
  change", "docs/api.md is updated", "README.md contains \`--json\`", "out/report.json exists",
  "tests pass". Any other wording is reported \`unchecked\`, never assumed met.
- Declare the files a task must produce as \`outputs\`: a worker that did not write them is not done
  (one that exited 0 without them is retried once).
- Named \`files\` (with \`outputs\`) are all the worker may write (none named: anything). Writing
  outside them, or changing an existing test without \`tests_may_change\`, makes it \`error\` with the
  paths on its row (\`write_audit: violation\`). Review and verify tasks may write only their
  \`outputs\`, and run after the implementers, against their changes (\`task_order\` says so).
- A workspace's \`.gaffer/objectives.json\` (\`OBJ-<n>\` ids with \`depends_on\`) orders a sequential job:
  tasks whose instruction names an objective run highest impact first, the others keep their places
  (\`task_order.by: "impact"\`); each named objective gets an evidence record when the job ends.
- Independent tasks that touch the same files, or agent CLIs you want at once: \`isolation: "worktree"\`
  (a git repository with a commit) gives each task its own worktree and branch \`gaffer/<job>/<task>\`,
  verified alone; \`merge: "auto"\` merges the passing ones, verifies the merged tree, and only then
  applies it to the workspace (a conflict or a failing merge is named, the branch kept). They run in
  parallel only when their verification command is on the configured \`fanout.parallel_safe_gates\`.
- \`runner: "shell"\` with a \`command\` runs a script (codemods, formatters, migrations).
- Tests are the judge: a worker that changes tests or the test harness is judged by the tests as they
  were before the work (run against its new code), and fails when those fail. A task meant to change
  tests says \`tests_may_change: true\` (type \`test\` implies it); its proof is then \`proved\` only if the
  original tests pass too.
- Green means green: when a task changes code (\`implement\`, \`fix\`, \`sweep\`, \`design\`, \`test\`), a test
  that failed before the work and still fails after it is the job's to fix — the job is \`partial\`, fix
  rounds and climbs get those tests. If some failures are known and not this job's, say so up front:
  \`"verify": {"command": "npm test", "known_failures": ["test/legacy.js > *"]}\` (ids or \`*\` globs; leave
  \`command\` out for auto), or commit them in \`.gaffer/workspace.json\` as \`{"verify": {"known_failures": [...]}}\`.
  A suite that stops early (no summary, no TAP plan, fewer tests than before the work) is never a pass.

## How to read the answer
- \`status\`: \`done\` means every worker finished AND the verification does not block AND criteria are
  met AND the proof is not contradicted. \`partial\`: read the \`verdict\` line — it says why.
- Trust \`result.changes\` (what changed on disk) and \`result.verification\` (what gaffer ran) over any
  worker's \`summary\`. \`claimed_only\` lists files a worker said it changed that did not change.
- \`proof.verdict\`: \`proved\` (the tests passed conclusively and the disk agrees), \`contradicted\` (the
  disk or the tests say otherwise), \`partial\` (some shown, some not), \`unproved\` (nothing could show
  it — neither failure nor success: add a \`verify\` command and re-dispatch if you need proof). Each
  \`uncertainty\` names a doubt and what it cost the confidence.
- \`verification.new_failures\` are the workers' doing; \`pre_existing\` were broken before (still the job's
  to fix when it changes code, unless in \`known_failures\`); \`missing_tests\` ran before the work and not
  after; \`flaky\` passed on a rerun and never block. \`fixed\` of \`checkpoint_failures\` says what the work
  fixed. Each failing id is named once: the compact answer lists it in one list and counts the rest
  (\`failures_count\`, \`<list>_count\`); \`?full=1\` (\`full: true\`) has every list whole. An inconclusive
  verification's \`advice\` says which \`verify.command\` would settle it. \`verification.original_tests\` is the checkpoint's tests run
  against the new code (present when the workers changed tests or the harness).
- The verdict line starts with the proof's words whenever the job is not \`proved\`;
  \`changes.outside_evidence\` lists writes into \`.git\` (hooks, config), editor configs and excluded
  folders — a planted hook is never silent.

## While it runs
- An answer with \`wait_again: true\` means the job is still live: WAIT AGAIN (\`workers_wait\`), do not
  re-dispatch. \`progress\` shows every task from the start; \`phase\` says what gaffer is doing;
  \`ceiling_s\` is the most time it can still take (raised, at most 3×, when jobs in this workspace took
  longer: \`ceiling_why\` says so).
- Detected states (\`rate_limited\`, \`waiting_for_input\`, \`auth_error\`, \`stuck\`, \`disk_full\`, \`oom\`)
  are reported, never a reason by themselves to kill a worker. Act on them if they persist.
- \`refusals\`: the worker was not allowed to do something (a destructive command, a write outside its
  scope) — a refusal, not a failure. Give a narrower instruction or widen \`files\`.
- \`budget_paused\` (429): a budget is spent (or, for an unattended job, ahead of pace); nothing started.
  Retry after \`retry_after_s\` (\`pause_until\` says when), or dispatch to another provider.
  \`breaker_open\` (429): several unattended jobs in a row failed outright; fix what fails, or retry
  after \`retry_after_s\`. A worker in state \`provider_suspended\` or \`budget_paused\` waits for its
  provider's reset or its budget's window (\`retry_at\`) and starts by itself: wait, do not re-dispatch.
- \`totals.spend\` and each worker's \`spend\` say what it cost in its billing's unit; \`cost unknown\`
  means the runner reported neither a cost nor tokens gaffer has a price for — not that it was free.
- \`needs_detail\` (422): spec lint in enforce mode found gaps (\`error.lint\` says what to add), or a
  task with \`grounded: true\` lacks \`receipts\`, \`done_means\` or a known \`type\`, or has a \`hold\`
  (\`error.grounding\` names each task's gaps). Nothing started; fix the task and send it again.
- \`awaiting_approval\`: a person's yes is needed first (\`approval: "required"\`, the config, a roster
  entry marked \`approve\`, an \`api\`-billed route, or nothing rostered for the task's type);
  nothing runs yet. \`asks\` has one decision-grade ask per task. Relay them; do not answer for the
  person unless they told you to (\`workers_approve\`, per task or all). Unanswered in time is no.
- \`escalation\` on the result: a roster-routed task that failed climbed one rung of its cost ladder
  (the next worker was told what the last one did); \`to: null, returned: true\` means it came back to
  you after two failed rungs — read \`why\` (the autopsy with \`full\`) and fix the task's scope or
  \`done_means\` before sending it again. A climb to a per-call (\`api\`) rung is another ask.
- \`gates\` on the result: each task's own checks (\`gates\` on a task: a command, \`diff-scope\`,
  \`claims\`, \`done_means\`), \`pass\`/\`fail\`/\`ambiguous\`; \`climb: true\` means no judge could decide:
  a person should look.
- To send review back to a finished task, call \`workers_follow_up\` with \`comments\` (\`{file, line,
  text}\`) and/or a \`note\`: a new job that resumes the worker's session where it can (\`follow_up.resumed\`),
  verified like any job; wait on its id. A worktree job's task is followed up on its branch (a new
  worktree from its tip, merged as the job's \`merge\` says). Do not re-dispatch the whole task to ask for a change.
- To correct a task while it runs, \`workers_steer\` with a \`message\`: a builtin worker reads it at its
  next turn (\`next_turn\`); agent CLIs and shell take no input mid-run, so it becomes the task's
  follow-up job when the job ends (\`queued_as_follow_up\`; the job's \`steer_delivered\` event names it).
- Cancel with \`workers_cancel\`; the answer still reports what changed on disk.
- \`interrupted\`: gaffer stopped under the job; re-dispatch the remaining work
  (\`POST /api/jobs/:id/redispatch\` re-runs the tasks that did not end \`done\`).
`;
