import { GafferError } from '../../../domain/errors.js';
import { issueNodeCredential, listNodeCredentials, revokeNodeCredential } from '../../../config/node-credentials.js';
import type { CliContext } from '../cli-context.js';
import { NODE_TOKEN_ENV } from './serve.js';

/** `gaffer nodes issue NAME`: node NAME's own credential, printed once (stdout); the data dir keeps its digest. */
export function nodesIssueCommand(cli: CliContext, name: string): Promise<number> {
  const credential = issueNodeCredential(cli.dataDir, name);
  cli.out(cli.json ? JSON.stringify({ name, credential }) : credential);
  cli.err(
    `gaffer: node ${name}'s credential (shown once, kept here only as its digest): start it with ${NODE_TOKEN_ENV}=<it> gaffer node --queue …, or --token-file FILE holding it; a running coordinator takes it at once`,
  );
  return Promise.resolve(0);
}

/** `gaffer nodes revoke NAME`: the coordinator refuses node NAME's credential from its next request on. */
export function nodesRevokeCommand(cli: CliContext, name: string): Promise<number> {
  if (!revokeNodeCredential(cli.dataDir, name))
    throw new GafferError(
      'not_found',
      `node ${name} has no live credential in this data dir (gaffer nodes credentials lists them)`,
      'name',
    );
  cli.err(`gaffer: node ${name}'s credential is revoked: the coordinator refuses it from its next request on`);
  return Promise.resolve(0);
}

/** `gaffer nodes credentials`: each node credential issued in this data dir, without the credential. */
export function nodesCredentialsCommand(cli: CliContext): Promise<number> {
  const all = listNodeCredentials(cli.dataDir);
  if (cli.json) cli.out(JSON.stringify(all.map(({ digest: _digest, ...c }) => c)));
  else if (all.length === 0) cli.out('no node credentials: gaffer nodes issue NAME makes one');
  else
    for (const c of all)
      cli.out(`${c.name}  issued ${c.issued}  ${c.revoked === null ? 'live' : `revoked ${c.revoked}`}`);
  return Promise.resolve(0);
}
