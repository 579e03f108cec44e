import type { LoadedConfig } from '../../config/config.js';
import { listStartSecretNames, registerPassedEnv } from '../../platform/process/env.js';
import { holdEnvSecrets } from '../../platform/process/scrub-env.js';
import { registerMaskedPaths } from '../../platform/sandbox/masks.js';
import type { CliContext } from './cli-context.js';

/**
 * Once at CLI start, for every command (serve, mcp, dispatch, …), after the config is read: config
 * `env.pass` registered for the workers' environment, the data dir and config file registered for the
 * sandbox to hide, and gaffer's secrets and every credential moved out of its environment into
 * memory (scrub-env.ts), so `/proc/<pid>/environ` and the children gaffer starts show none. A config
 * that does not load holds nothing back: every command but `doctor` refuses on it, and a second
 * read from a scrubbed environment could succeed differently (a malformed `GAFFER_TOKENS` gone
 * would start a server without tokens).
 */
export function protectSecretsAtStart(cli: CliContext): void {
  let loaded: LoadedConfig;
  try {
    loaded = cli.config;
  } catch {
    registerMaskedPaths([cli.dataDir]);
    return;
  }
  registerPassedEnv(loaded.config.env.pass);
  registerMaskedPaths([cli.dataDir, loaded.file]);
  holdEnvSecrets(listStartSecretNames(process.env));
}
