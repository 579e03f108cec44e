import type { GafferConfig } from './config.js';
import { GafferError } from '../domain/errors.js';
import {
  agentCliNetwork,
  builtinCommandNetwork,
  loopbackPortOf,
  shellNetwork,
  slirp4netnsStatus,
  type NetworkMode,
  type NetworkSetup,
  type SandboxNetwork,
} from '../platform/sandbox/network.js';

type NetworkConfig = Pick<GafferConfig, 'network' | 'models'>;

/** The runners' network from config `network` (spec 04): the endpoints' loopback ports are forwarded into agent CLIs. */
export function networkSetupOf(config: NetworkConfig): NetworkSetup {
  return {
    shell: config.network.shell,
    loopbackPorts: config.network.loopback_ports,
    endpointPorts: listEndpointPorts(config),
  };
}

/** The verification's network from config `network`: `none` unless `network.verification`; `loopback_ports` forwarded. */
export function verificationNetworkOf(config: NetworkConfig): SandboxNetwork {
  return { mode: config.network.verification ? 'outbound' : 'none', loopbackPorts: config.network.loopback_ports };
}

/** What each kind of run gets here (`gaffer doctor`): the mode asked for, as this machine can give it. */
export function describeNetworks(
  config: NetworkConfig & Pick<GafferConfig, 'sandbox'>,
  sandboxWorks: boolean,
): Record<'shell' | 'verification' | 'builtin' | 'agent CLIs', NetworkMode> {
  const setup = networkSetupOf(config);
  const effective = (network: SandboxNetwork): NetworkMode => {
    if (config.sandbox === 'off' || !sandboxWorks) return 'host';
    return network.mode === 'outbound' && slirp4netnsStatus().path === null ? 'host' : network.mode;
  };
  return {
    shell: effective(shellNetwork(setup)),
    verification: effective(verificationNetworkOf(config)),
    builtin: effective(builtinCommandNetwork(setup)),
    'agent CLIs': effective(agentCliNetwork(setup)),
  };
}

/**
 * Refuses to serve on a port the config forwards into sandboxes (`network.loopback_ports`, or a
 * model endpoint on loopback): a worker could drive gaffer's own API through it.
 */
export function vetServerPort(config: NetworkConfig, port: number): void {
  if (config.network.loopback_ports.includes(port)) {
    throw new GafferError(
      'invalid_request',
      `network.loopback_ports: ${port} is the port gaffer serves on, and forwarding it would let every sandboxed worker drive gaffer's API — remove ${port} from network.loopback_ports, or serve on another port (--port)`,
      'network.loopback_ports',
    );
  }
  for (const [name, endpoint] of Object.entries(config.models)) {
    if (loopbackPortOf(endpoint.url) !== port) continue;
    throw new GafferError(
      'invalid_request',
      `models.${name}.url: its port ${port} is the port gaffer serves on, and agent CLIs get that port forwarded — point the endpoint elsewhere, or serve on another port (--port)`,
      `models.${name}.url`,
    );
  }
}

function listEndpointPorts(config: NetworkConfig): number[] {
  return Object.values(config.models).flatMap((e) => {
    const port = loopbackPortOf(e.url);
    return port === null ? [] : [port];
  });
}
