import { GafferError } from './errors.js';
import { ladderOf, rungAbove, rungOf } from './ladder.js';
import { learnedStart } from './learn.js';
import { pickOf, routeByRoster, rosteredTypes, type Roster, type RosterEntry } from './roster.js';
import type { Billing, RosterPick, Route, Rung } from './route.js';
import type { TaskType } from './status.js';

/**
 * Every routing decision of gaffer, in one place (issue 34): a task's first route at admission
 * (the roster's pick, learned routing, a pin, a named runner, the shell, the default runner), the
 * route of its later attempts (fix rounds, retries: where its last attempt ran), the rung a climb
 * goes to, the fallback a held attempt moves to, and who pays for each. The engine's Router
 * (engine/routing/router.ts) asks these; nothing else decides a route.
 */

/** A task as routing sees it: where admission put it (a TaskSpec is one). */
export interface RoutedTask {
  runner: string;
  model: string | null;
  roster?: RosterPick;
}

/** What routing at admission goes by. */
export interface RoutingFacts {
  /** The configured default runner, when any. */
  defaultRunner: string | null;
  /** Runner keys this build can run. */
  available: readonly string[];
  /** The roster (spec 05), when one is configured: it routes the tasks that name no runner. */
  roster?: Roster | null;
  /**
   * `routing.learn` (spec 05): the acceptance each roster entry has had for a type, and the bar a rung
   * must clear; absent: learning is off and routing takes the first capable entry.
   */
  learn?: {
    minAcceptance: number;
    acceptance(type: TaskType): ReadonlyMap<string, { accepted: number; total: number }>;
  };
  /** Who pays for a runner's calls (config `runners.<key>.billing`): a routing null's proposed runner is asked with it. */
  billing?: (runner: string) => Billing;
  /**
   * Roster entries tasks must run on, by task name: a follow-up goes on where its task's last attempt
   * ran (a climb's rung), billed and asked as that entry — never as the runner it happens to name.
   */
  pins?: ReadonlyMap<string, string>;
}

/** Where a task runs, as admission decided: its runner and model, and the roster entry when the roster chose them. */
export interface Resolved {
  runner: string;
  model: string | null;
  roster?: RosterPick;
}

/**
 * A task's first route, decided at admission (so a request that cannot run is refused before
 * anything starts, and the job's spec records where a restart runs it): the roster entry it is
 * pinned to, else the roster's pick when it names no runner and gives no command, else the runner
 * it names (billed as the roster's entry for that runner and model), the shell for a command, or
 * the configured default.
 */
export function routeAtAdmission(
  t: { named: string | null; command: string | null; type: TaskType; model: string | null; pin: string | null },
  runners: RoutingFacts,
  field: string,
): Resolved {
  const { named, command, type, model } = t;
  const pinned =
    t.pin !== null
      ? runners.roster?.entries.find((e) => e.id === t.pin && runners.available.includes(e.runner))
      : undefined;
  if (pinned && runners.roster) return routeOnRoster(runners.roster, { type, model }, runners, field, pinned);
  // spec 05 "Routing": a task that names no runner (and gives no command: that is the shell's) is the roster's
  if (named === null && command === null && runners.roster) return routeOnRoster(runners.roster, t, runners, field);
  // A task that gives a `command` and names no runner means the shell runner: it is the only
  // runner a command line belongs to, configured default or not (issue 34: a default builtin runner
  // ran the model and dropped the command). (Our choice; the spec is silent.)
  const key = named ?? (command !== null ? 'shell' : runners.defaultRunner);
  if (key === null) {
    throw new GafferError(
      'no_runner',
      `${field}: no runner named and none configured — set "runner": "shell" with a "command", or configure a default runner`,
      `${field}.runner`,
    );
  }
  if (!runners.available.includes(key)) {
    throw new GafferError(
      'unknown_runner',
      `${field}.runner: "${key}" is not a runner this build can run (available: ${runners.available.join(', ')})`,
      `${field}.runner`,
    );
  }
  // issue 34: a runner and model the request names are billed as the roster's entry for that pair says
  // (an `api` entry asks first), whichever door named them
  const entry = model !== null ? runners.roster?.entries.find((e) => e.runner === key && e.model === model) : undefined;
  if (entry && runners.roster)
    return {
      runner: key,
      model,
      roster: { ...pickOf(entry, type, runners.roster), why: `the roster's entry for ${key} with model ${model}` },
    };
  return { runner: key, model };
}

/**
 * The roster's route for a task: the first capable entry; else a routing null — never dropped and
 * never a fallback of gaffer's own: the configured default runner is *proposed* in an ask (a person
 * says yes or no), and with no default runner the request is refused, naming what to add.
 */
export function routeOnRoster(
  roster: Roster,
  t: { type: TaskType; model: string | null },
  runners: RoutingFacts,
  field: string,
  pinned?: RosterEntry,
): Resolved {
  // a task that names its model is not climbed to another model, nor started elsewhere by the learner (spec 05: it runs there)
  const ladder = t.model === null || pinned ? ladderOf(roster, t.type, runners.available) : [];
  const learned =
    runners.learn && !pinned
      ? learnedStart(ladder, runners.learn.acceptance(t.type), runners.learn.minAcceptance)
      : null;
  const entry = pinned ?? learned?.entry ?? routeByRoster(roster, t.type, runners.available, t.model);
  if (entry) {
    const pick = pickOf(entry, t.type, roster);
    return {
      runner: entry.runner,
      model: pinned ? entry.model : (t.model ?? entry.model),
      roster: {
        ...pick,
        ...(pinned ? { why: `where its task last ran: roster entry ${pinned.id}` } : {}),
        ...(learned ? { why: learned.why, learned: { skipped: learned.skipped, figures: learned.figures } } : {}),
        ...(ladder.length > 1 ? { ladder: ladder.map(rungOf) } : {}),
        ...fallbacksOf(roster, [entry, ...ladder], t.type, runners.available),
      },
    };
  }
  const gap = `nothing in ${roster.source} takes "${t.type}"${t.model ? ` with model "${t.model}"` : ''} (its types: ${rosteredTypes(roster).join(', ')})`;
  const proposed = runners.defaultRunner;
  if (proposed === null || !runners.available.includes(proposed)) {
    throw new GafferError(
      'no_runner',
      `${field}: ${gap}, and no default runner is configured — add a roster entry whose tasks include "${t.type}", name a "runner", or configure default_runner`,
      `${field}.type`,
    );
  }
  // unknown billing is treated as money: it asks either way
  const billing = runners.billing?.(proposed) ?? 'api';
  return {
    runner: proposed,
    model: t.model,
    roster: {
      entry: null,
      provider: null,
      billing,
      cost: null,
      approve: true,
      why: `${gap}; the configured default runner "${proposed}" is proposed`,
    },
  };
}

/** The fallback rung of each entry a task may run on, when the fallback takes its type and can run here (issue 15). */
function fallbacksOf(
  roster: Roster,
  entries: readonly RosterEntry[],
  type: TaskType,
  available: readonly string[],
): { fallbacks?: Record<string, Rung> } {
  const fallbacks: Record<string, Rung> = {};
  for (const e of entries) {
    const to = e.fallback === null ? undefined : roster.entries.find((x) => x.id === e.fallback);
    if (to && to.tasks.includes(type) && available.includes(to.runner)) fallbacks[e.id] = rungOf(to);
  }
  return Object.keys(fallbacks).length > 0 ? { fallbacks } : {};
}

/** The route of a task's attempt as admission decided it (its first attempt's). */
export function admittedRoute(task: RoutedTask): Route {
  const endpoint = task.roster?.endpoint;
  return {
    runner: task.runner,
    model: task.model,
    entry: task.roster?.entry ?? null,
    provider: task.roster?.provider ?? null,
    ...(endpoint ? { endpoint } : {}),
  };
}

/** A rung as the route of an attempt. */
export function routeOfRung(rung: Rung): Route {
  return {
    runner: rung.runner,
    model: rung.model,
    entry: rung.entry,
    provider: rung.provider,
    ...(rung.endpoint !== null ? { endpoint: rung.endpoint } : {}),
  };
}

/** The rung a climb from `at` goes to (spec 05 "Escalation"): the cheapest strictly above it on the task's ladder; null: none. */
export function rungAboveOf(task: RoutedTask, at: Pick<Rung, 'cost'>): Rung | null {
  return rungAbove(task.roster?.ladder ?? [], at.cost);
}

/** The fallback rung of the entry `route` is on (issue 15), when the task's roster pick names one. */
export function fallbackOf(task: RoutedTask, route: Route): Rung | null {
  return route.entry !== null ? (task.roster?.fallbacks?.[route.entry] ?? null) : null;
}

/** Who pays for a route of a task: its roster rung's billing (the pick, a ladder rung, a fallback), else its runner's configured one. */
export function billingOfRoute(task: RoutedTask, route: Route, byRunner: (runner: string) => Billing): Billing {
  const roster = task.roster;
  if (roster && route.entry !== null) {
    if (route.entry === roster.entry) return roster.billing;
    const rung =
      roster.ladder?.find((r) => r.entry === route.entry) ??
      Object.values(roster.fallbacks ?? {}).find((r) => r.entry === route.entry);
    if (rung) return rung.billing;
  }
  return byRunner(route.runner);
}
