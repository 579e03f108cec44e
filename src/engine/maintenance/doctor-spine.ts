// `gaffer doctor`'s view of the routing spine (spec 05, spec 07): the roster in effect and where it
// came from, each task type's ladder, what the learner would read now, who asks first, each budget
// with its spend and reset, and the breaker. Read as a look: the store is opened read-only, never
// made or migrated (issue 12), and the figures are judged by the same code the engine judges with.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { breakerState, type BreakerState } from '../../domain/breaker.js';
import { budgetName, judgeBudget, type BudgetState } from '../../domain/budget.js';
import { toGafferError } from '../../domain/errors.js';
import { ladderOf, rungOf } from '../../domain/ladder.js';
import { learnedStart, LEARN_MIN_SAMPLES } from '../../domain/learn.js';
import { pickOf, routeByRoster, rosteredTypes, type Roster, type RosterEntry } from '../../domain/roster.js';
import type { Billing, CostTier } from '../../domain/route.js';
import type { TaskType } from '../../domain/status.js';
import { CONFIG_RUNNER_KEYS, type ConfigRunnerKey } from '../../config/config-schema.js';
import { defaultRunnerOf, type GafferConfig } from '../../config/config.js';
import { latestSchemaVersion, Store } from '../../store/store.js';
import { epochS } from '../clock.js';
import { needsYes } from '../routing/escalation.js';
import { Operations } from '../admission/operations.js';
import { ROSTER_FILE, rosterFor } from '../admission/roster-source.js';

/** One roster entry as doctor shows it. */
export interface EntryShown {
  entry: string;
  runner: string;
  /** Null: the runner's own default model. */
  model: string | null;
  billing: Billing;
  cost: CostTier;
  provider: string;
  tasks: TaskType[];
  approve: boolean;
  /** The entry that takes its work while its provider is suspended or its budget spent; null: none. */
  fallback: string | null;
  /** Why its runner cannot take its tasks here; absent when it can. */
  warning?: string;
}

/** The roster in effect. */
export interface RosterShown {
  /** Where it was read (`config <file>`, the data dir's gaffer.roster.json, a workspace's at HEAD); null: no roster. */
  source: string | null;
  entries: EntryShown[];
  /** Where else a roster could come from, or where tasks run without one. */
  note: string;
  /** A roster that is there but cannot be read: every job is refused until it is fixed. */
  error?: string;
}

/** A task type's cost ladder and where a task of the type starts now. */
export interface LadderShown {
  type: TaskType;
  /** Entry ids, cheapest first. */
  rungs: string[];
  starts_on: string | null;
  /** Why it starts there, in the words its task would record. */
  why: string | null;
}

/** `routing.learn` and the outcomes it reads. */
export interface LearningShown {
  on: boolean;
  min_acceptance: number;
  /** Outcomes a rung needs for a type before it may be skipped. */
  min_samples: number;
  /** Per ladder, each rung's logged outcomes for the type (not_dispatched and abstained left out). */
  figures: { type: TaskType; entries: { entry: string; accepted: number; total: number }[] }[];
}

/** Config `approval` and which entries ask before a task starts on them. */
export interface ApprovalShown {
  default: 'auto' | 'required';
  timeout_s: number;
  /** Entries a task asks a yes for before it runs there, with why. */
  asks: { entry: string; why: string }[];
  /** Entries a task runs on without asking (under `approval: "auto"`). */
  no_ask: string[];
}

/** One budget judged now. */
export interface BudgetShown {
  name: string;
  provider: string;
  entry: string | null;
  window: string;
  unit: string;
  limit: number;
  spent: number;
  /** Attempts in the window whose spend is unknown (not counted as 0). */
  unknown: number;
  state: BudgetState['state'];
  /** Until when work it counts is held (epoch s); null when `ok`. */
  pause_until: number | null;
  /** When a calendar window ends and the count starts again (epoch s); null for a rolling window. */
  resets: number | null;
}

/** The breaker's settings and its state now. */
export type BreakerShown = { trip_after: number; cooldown_s: number } & BreakerState;

/** What doctor says about routing, approval, budgets and the breaker. */
export interface SpineReport {
  roster: RosterShown;
  ladders: LadderShown[];
  learning: LearningShown;
  approval: ApprovalShown;
  budgets: BudgetShown[];
  /** Providers suspended now (rate-limited or out of quota). */
  suspensions: { provider: string; until: number; why: string }[];
  breaker: BreakerShown;
  /** Why the store's figures (outcomes, spend, finished jobs) are not in it; null: they were read. */
  store_note: string | null;
}

/** The spine as doctor shows it; `workspace`: also the roster a job there would take. Never throws for what it finds. */
export function describeSpine(config: GafferConfig, dataDir: string, workspace?: string): SpineReport {
  const { roster, shown } = readRoster(config, dataDir, workspace);
  const store = openStore(dataDir, config);
  try {
    const now = store.reader?.now() ?? epochS();
    const acceptance = (type: TaskType) =>
      store.reader?.acceptance(type) ?? new Map<string, { accepted: number; total: number }>();
    const ladders = roster ? laddersOf(roster, config, acceptance) : [];
    return {
      roster: shown,
      ladders,
      learning: {
        on: config.routing.learn,
        min_acceptance: config.routing.min_acceptance,
        min_samples: LEARN_MIN_SAMPLES,
        figures: ladders.map(({ type, rungs }) => {
          const logged = acceptance(type);
          return {
            type,
            entries: rungs.map((entry) => ({
              entry,
              accepted: logged.get(entry)?.accepted ?? 0,
              total: logged.get(entry)?.total ?? 0,
            })),
          };
        }),
      },
      approval: approvalOf(roster, config),
      budgets: (store.reader?.operations.budgets() ?? config.budgets.map((b) => judgeBudget(b, [], now))).map(
        budgetShown,
      ),
      suspensions: (store.reader?.operations.providers() ?? []).flatMap((p) =>
        p.suspended_until !== null
          ? [{ provider: p.provider, until: p.suspended_until, why: p.suspended_why ?? '' }]
          : [],
      ),
      breaker: { ...config.breaker, ...(store.reader?.operations.breaker() ?? breakerState([], config.breaker, now)) },
      store_note: store.note,
    };
  } finally {
    store.reader?.close();
  }
}

/** The roster a job would take (the config's, the data dir's file, or — with `workspace` — that workspace's at HEAD). */
function readRoster(
  config: GafferConfig,
  dataDir: string,
  workspace: string | undefined,
): { roster: Roster | null; shown: RosterShown } {
  const own = join(dataDir, ROSTER_FILE);
  const defaultRunner = defaultRunnerOf(config);
  const without = `a task runs on the runner it names, else ${defaultRunner === null ? 'it is refused (no default runner: set default_runner)' : `the default runner ${defaultRunner}`}`;
  let roster: Roster | null;
  try {
    roster = rosterFor(config.roster, dataDir, workspace);
  } catch (err) {
    const error = toGafferError(err).message;
    return {
      roster: null,
      shown: { source: null, entries: [], note: `cannot be read: every job is refused until it is fixed`, error },
    };
  }
  if (roster === null) {
    const where =
      workspace === undefined
        ? `none in the config or at ${own}`
        : `none in the config, at ${own} or committed in ${workspace}`;
    return {
      roster: null,
      shown: {
        source: null,
        entries: [],
        note: `${where} — ${without}; a workspace's committed ${ROSTER_FILE} routes its own jobs`,
      },
    };
  }
  const note =
    config.roster !== null || existsSync(own)
      ? `a workspace's ${ROSTER_FILE} is not read while this one is set`
      : `jobs in this workspace take it; another workspace's jobs take their own committed ${ROSTER_FILE}, and without one ${without}`;
  return { roster, shown: { source: roster.source, entries: roster.entries.map((e) => entryShown(e, config)), note } };
}

function entryShown(e: RosterEntry, config: GafferConfig): EntryShown {
  const known = (CONFIG_RUNNER_KEYS as readonly string[]).includes(e.runner);
  const warning = !known
    ? `runner "${e.runner}" is not one this build runs (${CONFIG_RUNNER_KEYS.join(', ')}): it is on no ladder`
    : !config.runners[e.runner as ConfigRunnerKey].enabled
      ? `runners.${e.runner}.enabled is false in the config`
      : null;
  return {
    entry: e.id,
    runner: e.runner,
    model: e.model,
    billing: e.billing,
    cost: e.cost,
    provider: e.provider,
    tasks: e.tasks,
    approve: e.approve,
    fallback: e.fallback,
    ...(warning !== null ? { warning } : {}),
  };
}

/** Each rostered type's ladder and where a task of it starts now: learned when `routing.learn` is on, else the roster's first entry taking it. */
function laddersOf(
  roster: Roster,
  config: GafferConfig,
  acceptance: (type: TaskType) => ReadonlyMap<string, { accepted: number; total: number }>,
): LadderShown[] {
  return rosteredTypes(roster).map((type) => {
    const ladder = ladderOf(roster, type, CONFIG_RUNNER_KEYS);
    const learned = config.routing.learn ? learnedStart(ladder, acceptance(type), config.routing.min_acceptance) : null;
    const first = learned === null ? routeByRoster(roster, type, CONFIG_RUNNER_KEYS, null) : null;
    const start = learned?.entry ?? first;
    return {
      type,
      rungs: ladder.map((e) => e.id),
      starts_on: start?.id ?? null,
      why: learned?.why ?? (first ? pickOf(first, type, roster).why : null),
    };
  });
}

/** Who asks before a task starts on an entry, by the rule admission uses with the config's default (a request may say `required` or `never`). */
function approvalOf(roster: Roster | null, config: GafferConfig): ApprovalShown {
  const policy = config.approval.default;
  const asks: ApprovalShown['asks'] = [];
  const noAsk: string[] = [];
  for (const e of roster?.entries ?? []) {
    if (!needsYes(rungOf(e), 'auto', policy)) noAsk.push(e.id);
    else
      asks.push({
        entry: e.id,
        why: e.billing === 'api' ? 'bills api' : e.approve ? 'marked approve: true' : 'approval.default is "required"',
      });
  }
  return { default: policy, timeout_s: config.approval.timeout_s, asks, no_ask: noAsk };
}

function budgetShown(b: BudgetState): BudgetShown {
  const { rule } = b;
  return {
    name: budgetName(rule),
    provider: rule.provider,
    entry: rule.entry,
    window: rule.window,
    unit: rule.unit,
    limit: rule.limit,
    spent: b.spent,
    unknown: b.unknown,
    state: b.state,
    pause_until: b.pause_until,
    resets: rule.window === '5h-rolling' ? null : b.end,
  };
}

/** The store's figures, read through the engine's own queries on a read-only connection. */
interface StoreReader {
  operations: Operations;
  acceptance(type: TaskType): Map<string, { accepted: number; total: number }>;
  now(): number;
  close(): void;
}

/** A read-only look at the store, or why there is none (no store yet, an older schema, unreadable). */
function openStore(dataDir: string, config: GafferConfig): { reader: StoreReader | null; note: string | null } {
  if (!existsSync(join(dataDir, 'gaffer.db')))
    return { reader: null, note: 'no store yet: no outcomes, spend or finished jobs to read' };
  let store: Store | null = null;
  try {
    store = new Store(dataDir, { readOnly: true });
    const version = Number(store.db.pragma('user_version', { simple: true }));
    const latest = latestSchemaVersion();
    if (version !== latest) {
      store.close();
      return {
        reader: null,
        note: `the store is at schema ${version}, this build reads ${latest}: its figures are not read (the next start migrates an older one)`,
      };
    }
    const opened = store;
    // the same Operations the engine judges with, set up from the same config
    const operations = new Operations(opened, {
      budgets: config.budgets,
      prices: config.prices,
      breaker: config.breaker,
    });
    return {
      reader: {
        operations,
        acceptance: (type) => opened.entryAcceptance(type),
        now: () => operations.now(),
        close: () => opened.close(),
      },
      note: null,
    };
  } catch (err) {
    store?.close();
    return { reader: null, note: `cannot read the store's figures: ${(err as Error).message}` };
  }
}
