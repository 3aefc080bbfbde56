// `mcpx signers authorize` and `mcpx signers revoke`: which other keys may act for the account
// (AuthorizeSigner, RevokeSigner; OWNER only). An AGENT signer (an agent runtime's key) is bound to
// the agents it acts for and may act for no other.
import { UsageError, flag, oneOfFlag, flags, need, type ParsedArgs, type Print } from './args.js';
import { readKey, act, type CliEnv } from './client.js';

const ROLES = ['OWNER', 'WRITER', 'AGENT'] as const;

/** `signers authorize PRINCIPAL --role OWNER|WRITER|AGENT [--agent NAME]...`: setting it again replaces role and agents. */
export async function signersAuthorize(env: CliEnv, args: ParsedArgs, print: Print): Promise<void> {
  const principal = need(args, 2, 'PRINCIPAL');
  const role = oneOfFlag(flag(args, 'role')?.toUpperCase(), ROLES, '--role is OWNER, WRITER or AGENT');
  if (role === undefined) throw new UsageError('--role is OWNER, WRITER or AGENT');
  const agents = flags(args, 'agent');
  if (role === 'AGENT' && agents.length === 0)
    throw new UsageError('an AGENT signer is bound to the agents it acts for: name at least one with --agent NAME');
  if (role !== 'AGENT' && agents.length > 0) throw new UsageError('--agent is for an AGENT signer only');
  const { signer } = await act(env, await readKey(env.keyFile), 'AuthorizeSigner', {
    principal,
    role,
    ...(agents.length > 0 ? { agents } : {}),
  });
  print(
    { signer },
    () =>
      `authorized ${signer.principal} as ${signer.role}${signer.agents !== undefined ? ` for agents ${signer.agents.join(', ')}` : ''}`,
  );
}

/** `signers revoke PRINCIPAL`: the key's next signed action is refused. */
export async function signersRevoke(env: CliEnv, args: ParsedArgs, print: Print): Promise<void> {
  const principal = need(args, 2, 'PRINCIPAL');
  const res = await act(env, await readKey(env.keyFile), 'RevokeSigner', { principal });
  print({ principal, ...res }, () =>
    res.revoked
      ? `revoked ${principal}: it may no longer act for this account`
      : `${principal} was not a signer of this account`,
  );
}
