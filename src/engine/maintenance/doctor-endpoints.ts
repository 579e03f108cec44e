import type { Roster, RosterEntry } from '../../domain/roster.js';
import { redactUrl, type GafferConfig, type ModelEndpoint } from '../../config/config.js';
import { rosterFor } from '../admission/roster-source.js';

/** The wire APIs the builtin agent speaks (a `gemini` endpoint is for the Gemini CLI only). */
const BUILTIN_APIS: readonly string[] = ['openai-compatible', 'anthropic'];

type Add = (name: string, status: 'ok' | 'warn' | 'fail', detail: string, fix?: string | null) => void;

/** The GET that lists an endpoint's models, its key in the header its API reads (never in the URL). */
export function modelsRequest(e: ModelEndpoint): { url: string; headers: Record<string, string> } {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (e.api === 'anthropic') {
    headers['anthropic-version'] = '2023-06-01';
    if (e.key) headers['x-api-key'] = e.key;
  } else if (e.api === 'gemini') {
    if (e.key) headers['x-goog-api-key'] = e.key;
  } else if (e.key) {
    headers.authorization = `Bearer ${e.key}`;
  }
  // the Gemini API lists its models under its version path; the others' base URLs carry theirs
  return {
    url: e.api === 'gemini' ? `${e.url.replace(/\/v1(beta)?\/?$/, '')}/v1beta/models` : `${e.url}/models`,
    headers,
  };
}

/** The model ids a models route lists (OpenAI `data[].id`, Gemini `models[].name`); none when it is not such a list. */
export function modelIds(body: string): string[] {
  try {
    const parsed = JSON.parse(body) as { data?: { id?: unknown }[]; models?: { name?: unknown }[] };
    const ids = (parsed.data ?? []).map((m) => m.id).concat((parsed.models ?? []).map((m) => m.name));
    return ids.filter((id): id is string => typeof id === 'string');
  } catch {
    return [];
  }
}

/**
 * Each roster entry that names a `models.<name>` (the judge among them): the endpoint exists, its
 * runner can speak it, a model is named for it, and — one GET per endpoint, only where an entry asks
 * for a model other than the endpoint's own (the `endpoint <name>` line checks that one) — the
 * endpoint lists it. The roster is the config's, else the data dir's (or the workspace's) file,
 * which config load does not see; a roster that does not load is left to the roster's own check.
 */
export async function checkEntryEndpoints(
  config: GafferConfig,
  dataDir: string,
  workspace: string | undefined,
  timeoutMs: number,
  add: Add,
): Promise<void> {
  let roster: Roster | null;
  try {
    roster = rosterFor(config.roster, dataDir, workspace);
  } catch {
    return;
  }
  if (roster === null) return;
  const listings = new Map<string, Promise<string[] | string>>();
  const listingOf = (name: string, e: ModelEndpoint) => {
    let listing = listings.get(name);
    if (listing === undefined) listings.set(name, (listing = listModels(e, timeoutMs)));
    return listing;
  };
  const judge = roster.judge?.id;
  const named = roster.entries.filter((entry): entry is RosterEntry & { endpoint: string } => entry.endpoint !== null);
  await Promise.all(named.map(async (entry) => add(...(await checkOne(entry, entry.id === judge, config, listingOf)))));
}

async function checkOne(
  entry: RosterEntry & { endpoint: string },
  isJudge: boolean,
  config: GafferConfig,
  listingOf: (name: string, e: ModelEndpoint) => Promise<string[] | string>,
): Promise<Parameters<Add>> {
  const check = `roster ${isJudge ? 'judge' : 'entry'} ${entry.id}`;
  const names = Object.keys(config.models);
  const e = config.models[entry.endpoint];
  if (e === undefined)
    return [
      check,
      'fail',
      `endpoint "${entry.endpoint}" is not a model endpoint (${names.length > 0 ? `models: ${names.join(', ')}` : 'no models are configured'})`,
      `add models.${entry.endpoint} with its url, or name another`,
    ];
  const where = `${entry.runner} on models.${entry.endpoint} (${e.api} ${redactUrl(e.url)})`;
  if (entry.runner === 'builtin' && !BUILTIN_APIS.includes(e.api))
    return [
      check,
      'fail',
      `${where}: the builtin agent speaks ${BUILTIN_APIS.join(' or ')}`,
      `point models.${entry.endpoint} at such an endpoint, or the entry at one`,
    ];
  const model = entry.model ?? e.model;
  if (model === null)
    return [
      check,
      'fail',
      `${where}: no model — the entry names none and models.${entry.endpoint} has none`,
      `give the entry a "model", or set models.${entry.endpoint}.model`,
    ];
  if (model === e.model)
    return [check, 'ok', `${where}, model ${model} (its listing: the endpoint ${entry.endpoint} line)`];
  const listed = await listingOf(entry.endpoint, e);
  if (typeof listed === 'string')
    return [
      check,
      'warn',
      `${where}, model ${model}: cannot list its models (${listed})`,
      `see the endpoint ${entry.endpoint} line`,
    ];
  if (listed.length > 0 && !listed.includes(model))
    return [
      check,
      'warn',
      `${where}: model ${model} is not listed (it lists ${listed.slice(0, 8).join(', ')}${listed.length > 8 ? ', …' : ''})`,
      `name a listed model in the roster entry ${entry.id}`,
    ];
  return [check, 'ok', `${where}, model ${model}${listed.length > 0 ? ' (listed)' : ''}`];
}

/** The endpoint's listed models; a string: why they could not be read (never the key). */
async function listModels(e: ModelEndpoint, timeoutMs: number): Promise<string[] | string> {
  const { url, headers } = modelsRequest(e);
  try {
    const res = await fetch(url, { headers, signal: AbortSignal.timeout(timeoutMs), redirect: 'manual' });
    const body = await res.text().catch(() => '');
    return res.ok ? modelIds(body) : `HTTP ${res.status}`;
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).name;
    return cause === 'TimeoutError' ? `no answer within ${timeoutMs / 1000} s` : `unreachable (${cause})`;
  }
}
