import { GafferError } from '../../domain/errors.js';
import type { CliRunnerOptions } from './cli-runner.js';
import { CLI_PROFILES, type CliEndpoint, type CliProfile } from './profiles.js';

/** A configured model endpoint as the CLI runners read it (config `models.<name>`). */
interface ConfiguredEndpoint {
  url: string;
  api: string;
  model: string | null;
  key: string | null;
}

/** A runner's config entry as the CLI runners read it. */
interface ConfiguredRunner {
  enabled: boolean;
  billing: CliRunnerOptions['billing'];
  home: string | null;
  endpoint?: string | null;
}

/**
 * The agent CLI runners' options from the effective config (`runners.<key>.enabled/billing/home/endpoint`;
 * the sandbox is the engine's, given by createRunners). `endpoint` names a `models.<name>` the CLI is
 * pointed at through its own settings (profiles.ts) instead of its vendor's API; an endpoint whose
 * wire API the CLI does not speak is refused, naming both.
 */
export function cliRunnerOptions(config: { runners: object; models?: Record<string, ConfiguredEndpoint> }): Record<string, CliRunnerOptions> {
  const out: Record<string, CliRunnerOptions> = {};
  for (const [key, profile] of CLI_PROFILES) {
    const entry = (config.runners as Record<string, ConfiguredRunner | undefined>)[key];
    const name = entry?.endpoint ?? null;
    out[key] = {
      enabled: entry?.enabled ?? false,
      billing: entry?.billing ?? 'subscription',
      home: entry?.home ?? null,
      ...(name !== null ? { endpoint: cliEndpoint(profile, name, config.models?.[name]) } : {}),
    };
  }
  return out;
}

function cliEndpoint(profile: CliProfile, name: string, e: ConfiguredEndpoint | undefined): CliEndpoint {
  const field = `runners.${profile.key}.endpoint`;
  if (e === undefined) throw new GafferError('invalid_request', `${field}: "${name}" is not a model endpoint — add models.${name}`, field);
  if (e.api !== profile.endpointApi) {
    throw new GafferError('invalid_request', `${field}: ${profile.label} speaks the ${profile.endpointApi} API and models.${name} is ${e.api} — point it at an ${profile.endpointApi} endpoint (models.<name>.api)`, field);
  }
  // the CLIs add the version path themselves
  return { url: e.url.replace(/\/v1(beta)?\/?$/, ''), key: e.key ?? 'no-key', model: e.model };
}
