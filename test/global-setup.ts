import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { probeSandbox } from '../src/platform/sandbox/probe.js';
import { CLI_PROFILES } from '../src/runners/cli/profiles.js';
import { offlineSupport } from './support/model-server/index.js';

/**
 * Outside CI a test that needs something this machine lacks (bubblewrap, Chromium, Redis, the agent
 * CLIs, a loopback-only network namespace) skips and says why. Under CI=true that skip would hide a
 * whole suite that never ran, so the run stops here instead, naming what is missing and how to get
 * it (.ci/run installs all of it).
 */
export default function requirePrerequisitesInCi(): void {
  if (process.env.CI !== 'true') return;
  const missing: string[] = [];
  const sandbox = probeSandbox();
  if (!sandbox.available) missing.push(`bubblewrap sandbox: ${sandbox.reason} (apt-get install bubblewrap)`);
  const chromium = process.env.GAFFER_CHROMIUM ?? '/usr/bin/chromium';
  if (!existsSync(chromium))
    missing.push(`Chromium at ${chromium} (apt-get install chromium, or GAFFER_CHROMIUM=<path>)`);
  if (spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status !== 0)
    missing.push('redis-server (apt-get install redis-server)');
  const agents = resolve('test/agents/node_modules/.bin');
  for (const profile of CLI_PROFILES.values()) {
    if (!existsSync(join(agents, profile.binary)))
      missing.push(`the ${profile.binary} agent CLI in ${agents} (bash scripts/install-agent-clis.sh)`);
  }
  const offline = offlineSupport();
  if (!offline.ok)
    missing.push(
      `a loopback-only network namespace for the agent CLIs: ${offline.reason} (apt-get install iproute2 util-linux)`,
    );
  if (missing.length > 0) {
    throw new Error(
      `CI=true: every suite must run, and this machine lacks what some need:\n  - ${missing.join('\n  - ')}\n(unset CI to let those suites skip instead)`,
    );
  }
}
