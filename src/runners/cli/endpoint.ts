import { GafferError } from '../../domain/errors.js';
import type { CliEndpoint, CliProfile } from './profiles.js';

/** A configured model endpoint as the CLI runners read it (config `models.<name>`). */
export interface ConfiguredEndpoint {
  url: string;
  api: string;
  model: string | null;
  key: string | null;
}

/** A `models.<name>` as the CLI is pointed at it; refused, naming `field`, when there is none or the CLI does not speak its API. */
export function cliEndpoint(
  profile: CliProfile,
  name: string,
  e: ConfiguredEndpoint | undefined,
  field: string,
): CliEndpoint {
  if (e === undefined)
    throw new GafferError('invalid_request', `${field}: "${name}" is not a model endpoint — add models.${name}`, field);
  if (e.api !== profile.endpointApi) {
    throw new GafferError(
      'invalid_request',
      `${field}: ${profile.label} speaks the ${profile.endpointApi} API and models.${name} is ${e.api} — point it at an ${profile.endpointApi} endpoint (models.<name>.api)`,
      field,
    );
  }
  // the CLIs add the version path themselves
  return { url: e.url.replace(/\/v1(beta)?\/?$/, ''), key: e.key ?? 'no-key', model: e.model };
}
