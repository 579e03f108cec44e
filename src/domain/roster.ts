// spec 05 "The roster (data)": which runner and model take which task types, at what cost and
// billing. Routing reads it; no code names a model, a provider or a type → model mapping.
import { z } from 'zod';
import { AGENT_CLI_KEYS } from './agent-cli-keys.js';
import { GafferError } from './errors.js';
import { knownKeysAt, suggestKeys } from './nearest-key.js';
import { BILLINGS, COST_TIERS, type Billing, type CostTier, type RosterPick } from './route.js';
import { TASK_TYPES, type TaskType } from './status.js';

/**
 * Roster fields the spec names that this build does not act on yet: a roster that sets one is
 * refused with `not_supported` (never accepted and ignored), the message saying what to do instead.
 */
const NOT_YET: Record<string, string> = {
  trust: 'trust levels are not acted on yet — remove "trust"',
  max_concurrency:
    'per-entry concurrency is not enforced yet — remove "max_concurrency" (config workers.max_parallel caps every worker)',
  fanout: 'a roster file does not hold fan-out settings — move "fanout" to the config file\'s top-level "fanout"',
};

/** The runners a roster entry may point at a `models.<name>`: the builtin agent and the agent CLIs. */
const ENDPOINT_RUNNERS: readonly string[] = ['builtin', ...AGENT_CLI_KEYS];

/** The wire APIs the builtin agent speaks (a `gemini` endpoint is for the Gemini CLI only). */
const BUILTIN_APIS: readonly string[] = ['openai-compatible', 'anthropic'];

const entrySchema = z.strictObject({
  id: z
    .string()
    .regex(
      /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/,
      'must be 1–64 letters, digits, ".", "_" or "-", starting with a letter or digit',
    ),
  runner: z.string().min(1).max(64),
  model: z.string().min(1).max(200).nullable().optional(),
  provider: z.string().min(1).max(100),
  billing: z.enum(BILLINGS),
  cost: z.enum(COST_TIERS),
  tasks: z.array(z.enum(TASK_TYPES)).min(1).max(TASK_TYPES.length),
  approve: z.boolean().optional(),
  trust: z.unknown().optional(),
  max_concurrency: z.unknown().optional(),
  fallback: z.string().min(1).max(64).optional(),
  endpoint: z.string().min(1).max(100).optional(),
});

export const rosterSchema = z.strictObject({
  entries: z.array(entrySchema).min(1).max(200),
  judge: z.strictObject({ entry: z.string().min(1).max(64) }).optional(),
  fanout: z.unknown().optional(),
});

/** One validated entry: a runner/model pair, who pays, its cost tier, the task types it takes. */
export interface RosterEntry {
  id: string;
  runner: string;
  /** Null: the runner's own default model. */
  model: string | null;
  provider: string;
  billing: Billing;
  cost: CostTier;
  tasks: TaskType[];
  /** Its tasks always ask under `approval: "auto"`. */
  approve: boolean;
  /**
   * A `models.<name>` the entry's attempts run against: a builtin entry's model calls go there instead
   * of `models.default`, an agent CLI is pointed at it instead of its configured one (spec 04
   * endpoints); null: the runner's own.
   */
  endpoint: string | null;
  /**
   * The entry that takes this one's work while its provider is suspended (rate-limited or out of
   * quota, issue 15) or its budget is spent; null: its work waits. Followed one step, never chained.
   */
  fallback: string | null;
}

/** A validated roster and where it was read from (named in every message about it). */
export interface Roster {
  source: string;
  entries: RosterEntry[];
  /** The entry whose model drafts the asks' recommendations (spec 05); a `builtin` entry: the judge runs on its provider stack, against its `endpoint` (default `models.default`). */
  judge: RosterEntry | null;
}

/**
 * Validates a roster (config `roster`, or a `gaffer.roster.json`): every refusal names the source,
 * the field, the value and the fix; a field the spec names but this build does not act on is
 * `not_supported`. Entry ids are unique.
 */
export function parseRoster(raw: unknown, source: string): Roster {
  const parsed = rosterSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = ['roster', ...(issue?.path ?? []).map(String)].join('.').replace(/\.(\d+)(?=\.|$)/g, '[$1]');
    const what =
      issue?.code === 'unrecognized_keys'
        ? `unknown key(s) ${issue.keys.join(', ')}${withSuggestion(suggestKeys(issue.keys, knownKeysAt(rosterSchema, issue.path)))}`
        : `${issue?.message ?? 'invalid'}${valueAt(raw, issue?.path ?? [])}`;
    throw new GafferError('invalid_request', `${source}: ${field}: ${what}`, field);
  }
  const roster = parsed.data;
  if (roster.fanout !== undefined)
    throw new GafferError('not_supported', `${source}: roster.fanout: ${NOT_YET.fanout}`, 'roster.fanout');
  const seen = new Set<string>();
  const entries = roster.entries.map((e, i): RosterEntry => {
    for (const key of ['trust', 'max_concurrency'] as const) {
      if (e[key] !== undefined)
        throw new GafferError(
          'not_supported',
          `${source}: roster.entries[${i}].${key}: ${NOT_YET[key]}`,
          `roster.entries[${i}].${key}`,
        );
    }
    if (seen.has(e.id))
      throw new GafferError(
        'invalid_request',
        `${source}: roster.entries[${i}].id: "${e.id}" is used by an earlier entry; ids must be unique`,
        `roster.entries[${i}].id`,
      );
    seen.add(e.id);
    if (e.endpoint !== undefined && !ENDPOINT_RUNNERS.includes(e.runner)) {
      throw new GafferError(
        'invalid_request',
        `${source}: roster.entries[${i}].endpoint: only a builtin or agent CLI entry (${ENDPOINT_RUNNERS.join(', ')}) is pointed at an endpoint; ${e.runner} calls no model — remove "endpoint"`,
        `roster.entries[${i}].endpoint`,
      );
    }
    return {
      id: e.id,
      runner: e.runner,
      model: e.model ?? null,
      provider: e.provider,
      billing: e.billing,
      cost: e.cost,
      tasks: e.tasks,
      approve: e.approve ?? false,
      endpoint: e.endpoint ?? null,
      fallback: e.fallback ?? null,
    };
  });
  entries.forEach((e, i) => vetFallback(e, i, entries, source));
  return { source, entries, judge: judgeOf(roster.judge?.entry, entries, source) };
}

/**
 * Refuses an entry whose `endpoint` names no configured `models.<name>` — naming the field, the value
 * and the names there are — and a builtin entry's endpoint of a wire API the builtin agent does not
 * speak. Checked where the roster meets the config: at config load, and at each submission for a
 * roster file (the runners vet it again there).
 */
export function vetRosterEndpoints(roster: Roster, models: Readonly<Record<string, { api: string }>>): void {
  roster.entries.forEach((e, i) => {
    if (e.endpoint === null) return;
    const field = `roster.entries[${i}].endpoint`;
    const names = Object.keys(models);
    const model = models[e.endpoint];
    if (model === undefined) {
      throw new GafferError(
        'invalid_request',
        `${roster.source}: ${field}: "${e.endpoint}" is not a model endpoint (${names.length > 0 ? `models: ${names.join(', ')}` : 'no models are configured'}) — add models.${e.endpoint} with its url, or name another`,
        field,
      );
    }
    if (e.runner === 'builtin' && !BUILTIN_APIS.includes(model.api)) {
      const usable = names.filter((n) => BUILTIN_APIS.includes(models[n]?.api ?? ''));
      throw new GafferError(
        'invalid_request',
        `${roster.source}: ${field}: models.${e.endpoint} speaks the ${model.api} API and the builtin agent speaks ${BUILTIN_APIS.join(' or ')} — name one of ${usable.length > 0 ? usable.join(', ') : '(none configured)'}, or point the entry at an agent CLI that speaks it`,
        field,
      );
    }
  });
}

/**
 * A fallback moves work to another provider without asking anyone, so it must be an entry of this
 * roster, on another provider, that needs no yes (not `api`, not `approve`).
 */
function vetFallback(e: RosterEntry, i: number, entries: readonly RosterEntry[], source: string): void {
  if (e.fallback === null) return;
  const field = `roster.entries[${i}].fallback`;
  const to = entries.find((x) => x.id === e.fallback);
  const refuse = (why: string) =>
    new GafferError('invalid_request', `${source}: ${field}: ${JSON.stringify(e.fallback)} ${why}`, field);
  if (!to)
    throw refuse(`is not an entry of the roster (entries: ${entries.map((x) => x.id).join(', ')}) — name one of them`);
  if (to.id === e.id) throw refuse('is the entry itself — name an entry on another provider');
  if (to.provider === e.provider)
    throw refuse(
      `is on the same provider (${e.provider}), which would be suspended with it — name an entry on another provider`,
    );
  if (to.billing === 'api' || to.approve)
    throw refuse(
      `${to.billing === 'api' ? 'bills api' : 'is marked approve'}: a fallback takes work without asking, so it must need no yes — name a free or subscription entry`,
    );
}

function judgeOf(id: string | undefined, entries: readonly RosterEntry[], source: string): RosterEntry | null {
  if (id === undefined) return null;
  const entry = entries.find((e) => e.id === id);
  if (!entry)
    throw new GafferError(
      'invalid_request',
      `${source}: roster.judge.entry: "${id}" is not an entry of the roster (entries: ${entries.map((e) => e.id).join(', ')})`,
      'roster.judge.entry',
    );
  if (entry.runner !== 'builtin') {
    throw new GafferError(
      'invalid_request',
      `${source}: roster.judge.entry: "${id}" runs on ${entry.runner}; the judge runs on the builtin provider stack — name a builtin entry`,
      'roster.judge.entry',
    );
  }
  return entry;
}

/**
 * spec 05 "Routing": the first entry (roster order is the tie-break) that takes the task's type and
 * whose runner this build can run — and, when the task names a model without a runner, serves that
 * model. Null: a routing null (nothing rostered takes it).
 */
export function routeByRoster(
  roster: Roster,
  type: TaskType,
  available: readonly string[],
  model: string | null,
): RosterEntry | null {
  return (
    roster.entries.find(
      (e) => e.tasks.includes(type) && available.includes(e.runner) && (model === null || e.model === model),
    ) ?? null
  );
}

/** The pick a routed task keeps (its asks, attempts and outcome name the entry). */
export function pickOf(entry: RosterEntry, type: TaskType, roster: Roster): RosterPick {
  return {
    entry: entry.id,
    provider: entry.provider,
    billing: entry.billing,
    cost: entry.cost,
    approve: entry.approve,
    ...(entry.endpoint !== null ? { endpoint: entry.endpoint } : {}),
    why: `the first entry of ${roster.source} taking "${type}"`,
  };
}

/** The types some entry of the roster takes, in roster order (for a routing null's message). */
export function rosteredTypes(roster: Roster): TaskType[] {
  return [...new Set(roster.entries.flatMap((e) => e.tasks))];
}

function withSuggestion(suggestion: string): string {
  return suggestion ? ` — ${suggestion}` : '';
}

/** `, got "cheap"` for a scalar at the issue's path; '' otherwise. */
function valueAt(raw: unknown, path: readonly PropertyKey[]): string {
  let node: unknown = raw;
  for (const step of path) {
    if (node === null || typeof node !== 'object') return '';
    node = (node as Record<PropertyKey, unknown>)[step];
  }
  return typeof node === 'string' || typeof node === 'number' || typeof node === 'boolean'
    ? `, got ${JSON.stringify(node)}`
    : '';
}
