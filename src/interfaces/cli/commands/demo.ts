import { spawn } from 'node:child_process';
import { packageFile } from '../package-info.js';

/**
 * Runs the example the package ships (`examples/demo.mjs`, meant to be read): it copies a tiny
 * project whose tests fail to a temp dir and dispatches one job on it with a data dir of its own
 * there, so nothing of the user's is touched. Its exit code is the demo's: 0 when proved.
 */
export async function demoCommand(): Promise<number> {
  const child = spawn(process.execPath, [packageFile('examples/demo.mjs')], { stdio: 'inherit' });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}
