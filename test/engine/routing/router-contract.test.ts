import { afterAll } from 'vitest';
import { composeServices } from '../../../src/engine/compose.js';
import { rosterRouter } from '../../../src/engine/routing/router.js';
import { Store } from '../../../src/store/store.js';
import { tempDir } from '../../helpers/temp.js';
import { routerContract, RUNNER_BILLING } from './router-contract.js';

routerContract('the roster router', () => rosterRouter((runner) => RUNNER_BILLING[runner] ?? 'free'));

// the router an engine runs with: the composition root's, config billing merged over the defaults
const stores: Store[] = [];
afterAll(() => stores.forEach((s) => s.close()));
routerContract("the engine's composed router", () => {
  const dataDir = tempDir();
  const store = new Store(dataDir);
  stores.push(store);
  return composeServices({ dataDir, billing: RUNNER_BILLING }, store).router;
});
