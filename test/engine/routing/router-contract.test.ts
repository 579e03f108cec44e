import { afterAll } from 'vitest';
import { admittedRoute } from '../../../src/domain/routing.js';
import { composeServices, type EngineOptions } from '../../../src/engine/compose.js';
import { rosterRouter } from '../../../src/engine/routing/router.js';
import { Store } from '../../../src/store/store.js';
import { tempDir } from '../../helpers/temp.js';
import { routerContract, RUNNER_BILLING } from './router-contract.js';

routerContract('the roster router', () => rosterRouter((runner) => RUNNER_BILLING[runner] ?? 'free'));

// the router an engine runs with: the composition root's, config billing merged over the defaults
const stores: Store[] = [];
afterAll(() => stores.forEach((s) => s.close()));
const composed = (router?: EngineOptions['router']) => () => {
  const dataDir = tempDir();
  const store = new Store(dataDir);
  stores.push(store);
  return composeServices({ dataDir, billing: RUNNER_BILLING, ...(router ? { router } : {}) }, store).router;
};
routerContract("the engine's composed router", composed());
// an embedder's partial router (EngineOptions.router) routes attempts its own way; the default's climb, fallback and billing stay
routerContract(
  "the engine's composed router under an embedder's partial one",
  composed({ route: (task, history) => history.at(-1)?.route ?? admittedRoute(task) }),
);
