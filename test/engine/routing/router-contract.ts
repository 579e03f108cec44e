import { describe, expect, it } from 'vitest';
import { parseJobRequest, type TaskSpec } from '../../../src/domain/request.js';
import { parseRoster } from '../../../src/domain/roster.js';
import type { Billing, Route } from '../../../src/domain/route.js';
import type { Router } from '../../../src/engine/routing/router.js';

/** The attempts so far a Router routes from (only their routes matter to it). */
type History = Parameters<Router['route']>[1];

/**
 * A fix ladder of four rungs, each billed unlike the runner's own billing (below) so a decision read
 * from the wrong place shows: `cheap` falls back to `backup`, which takes fixes too.
 */
const ROSTER = parseRoster(
  {
    entries: [
      {
        id: 'cheap',
        runner: 'builtin',
        model: 'small',
        provider: 'home',
        billing: 'free',
        cost: 'free',
        tasks: ['fix'],
        fallback: 'backup',
        endpoint: 'local',
      },
      {
        id: 'backup',
        runner: 'builtin',
        model: 'spare',
        provider: 'other',
        billing: 'subscription',
        cost: 'low',
        tasks: ['fix'],
      },
      {
        id: 'middle',
        runner: 'builtin',
        model: 'mid',
        provider: 'cloud',
        billing: 'free',
        cost: 'mid',
        tasks: ['fix'],
      },
      {
        id: 'top',
        runner: 'builtin',
        model: 'big',
        provider: 'cloud',
        billing: 'subscription',
        cost: 'high',
        tasks: ['fix'],
      },
    ],
  },
  'router contract roster',
);

/** Config `runners.<key>.billing` the router is made with: never what a roster rung says. */
export const RUNNER_BILLING: Readonly<Record<string, Billing>> = { builtin: 'api', shell: 'subscription' };

const facts = { defaultRunner: null, available: ['builtin', 'shell'], roster: ROSTER };
const fix = (extra: Record<string, unknown> = {}) => ({
  name: 'a',
  type: 'fix',
  instruction: 'fix the parser in src/p.js',
  files: ['src/p.js'],
  ...extra,
});
const taskOf = (task: Record<string, unknown>): TaskSpec => {
  const spec = parseJobRequest({ workspace: '/tmp/router-contract', tasks: [task] }, facts);
  return spec.tasks[0] as TaskSpec;
};
/** Routed by the roster: the cheapest fix rung, its ladder and fallback kept on the task. */
const rostered = () => taskOf(fix());
/** Names its model: no ladder to climb, but its entry's fallback still stands by. */
const pinnedModel = () => taskOf(fix({ model: 'small' }));
/** Gives a command: the shell, no roster entry. */
const shellTask = () => taskOf({ name: 'a', instruction: 'touch x', command: 'touch x' });

const route = (
  runner: string,
  model: string | null,
  entry: string | null,
  provider: string | null,
  endpoint?: string,
): Route => ({ runner, model, entry, provider, ...(endpoint ? { endpoint } : {}) });
const history = (...routes: Route[]): History =>
  routes.map((r, i) => ({ worker: `w${i}`, role: 'worker', route: r })) as unknown as History;

/**
 * What any Router must do (issue 34): the one place every attempt's route, climb, fallback and
 * billing are asked. `make` builds the implementation with `RUNNER_BILLING` as the runners' billing.
 */
export function routerContract(name: string, make: () => Router): void {
  describe(`${name} keeps the Router contract`, () => {
    it('a first attempt goes where admission routed the task: its pick, model, entry, provider and endpoint', () => {
      const router = make();
      expect(router.route(rostered(), [])).toEqual(route('builtin', 'small', 'cheap', 'home', 'local'));
      expect(router.route(shellTask(), [])).toEqual(route('shell', null, null, null));
    });

    it('a later attempt (a fix round, a retry) goes where the last attempt ran, not back to the admitted route', () => {
      const router = make();
      const climbed = route('builtin', 'mid', 'middle', 'cloud');
      const fellBack = route('builtin', 'spare', 'backup', 'other');
      expect(router.route(rostered(), history(route('builtin', 'small', 'cheap', 'home', 'local'), climbed))).toEqual(
        climbed,
      );
      expect(router.route(rostered(), history(climbed, fellBack))).toEqual(fellBack);
    });

    it('climb: the cheapest rung strictly above the one given; null at the top and for a task without a ladder', () => {
      const router = make();
      expect(router.climb(rostered(), { cost: 'free' })).toMatchObject({
        entry: 'backup',
        cost: 'low',
        runner: 'builtin',
        model: 'spare',
        billing: 'subscription',
      });
      expect(router.climb(rostered(), { cost: 'low' })?.entry).toBe('middle');
      expect(router.climb(rostered(), { cost: 'mid' })?.entry).toBe('top');
      expect(router.climb(rostered(), { cost: 'high' })).toBeNull();
      expect(router.climb(pinnedModel(), { cost: 'free' })).toBeNull();
      expect(router.climb(shellTask(), { cost: 'free' })).toBeNull();
    });

    it("fallback: the route of the entry's fallback; null for an entry without one and for a route on no entry", () => {
      const router = make();
      const cheap = route('builtin', 'small', 'cheap', 'home', 'local');
      expect(router.fallback(rostered(), cheap)).toEqual(route('builtin', 'spare', 'backup', 'other'));
      expect(router.fallback(pinnedModel(), cheap)).toEqual(route('builtin', 'spare', 'backup', 'other'));
      expect(router.fallback(rostered(), route('builtin', 'big', 'top', 'cloud'))).toBeNull();
      expect(router.fallback(shellTask(), route('shell', null, null, null))).toBeNull();
    });

    it("billing: the roster pick's, a ladder rung's or a fallback's own billing; else the runner's configured one", () => {
      const router = make();
      expect(router.billing(rostered(), route('builtin', 'small', 'cheap', 'home', 'local'))).toBe('free');
      expect(router.billing(rostered(), route('builtin', 'mid', 'middle', 'cloud'))).toBe('free');
      expect(router.billing(rostered(), route('builtin', 'big', 'top', 'cloud'))).toBe('subscription');
      // the model-pinned task has no ladder: its fallback is found among the fallbacks alone
      expect(router.billing(pinnedModel(), route('builtin', 'spare', 'backup', 'other'))).toBe('subscription');
      expect(router.billing(shellTask(), route('shell', null, null, null))).toBe(RUNNER_BILLING.shell);
      // a route on no entry of the task's pick (a named runner), and an entry the task never saw
      expect(router.billing(rostered(), route('builtin', 'other', null, null))).toBe(RUNNER_BILLING.builtin);
      expect(router.billing(pinnedModel(), route('builtin', 'mid', 'middle', 'cloud'))).toBe(RUNNER_BILLING.builtin);
    });
  });
}
