import { parseJobRequest } from '../../src/domain/request.js';
import type { Store } from '../../src/store/store.js';

/** A one-task shell job's row as the store takes it: `id` in `workspace`, owned by no one, held by this process. */
export function newJob(id: string, workspace = '/w', extra: Partial<Parameters<Store['insertJob']>[0]> = {}) {
  return {
    id,
    owner: null,
    spec: parseJobRequest(
      { workspace, tasks: [{ instruction: 'x', command: 'true' }] },
      { defaultRunner: null, available: ['shell'] },
    ),
    created: Date.now() / 1000,
    idemKey: null,
    requestHash: null,
    idemWindowS: 3600,
    pid: process.pid,
    pidStart: 0,
    ...extra,
  };
}
