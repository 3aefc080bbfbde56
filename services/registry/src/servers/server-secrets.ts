import { ErrorCodes, WireError } from '@mcpx/contracts';
import type { Database } from '@mcpx/db';
import type { Kysely } from 'kysely';
import type { McpServerRecord } from '../catalog/mcp-servers.repository.js';
import { keepsStoredHeader, withBearerToken } from '../credentials/auth-config.js';
import { headerSecretName, isOwnSecretRef, ownedSecretNames } from '../credentials/server-headers.js';
import type { ValidServerConfig } from '../credentials/valid-server-config.js';
import type { ServersDeps } from './servers-deps.js';

// SetMcpServer's rules for a server's secret headers. Secrets stay with their origin
// (`scheme://host[:port]`): each is sealed for the origin it was given for, and a server moved to
// another origin keeps none it was not given again.

type Trx = Kysely<Database>;

/** A `secretRefs` entry must name a secret the account holds. */
export async function refuseUnknownSecretRefs(
  deps: Pick<ServersDeps, 'secrets'>,
  account: string,
  config: ValidServerConfig,
  trx: Trx,
): Promise<void> {
  const existing = await deps.secrets.existingNames(account, Object.values(config.secretRefs), trx);
  for (const [header, ref] of Object.entries(config.secretRefs)) {
    if (!existing.has(ref))
      throw new WireError(ErrorCodes.invalidInput, `config.secretRefs.${header}: no secret named ${ref}`, {
        field: `config.secretRefs.${header}`,
      });
  }
}

/**
 * A `secretRefs` entry may keep only a secret this server already holds under that header, and
 * never across a move to another origin (the value must be given again for the new URL).
 */
export function refuseForeignSecretRefs(
  config: ValidServerConfig,
  previous: McpServerRecord | null,
  moved: boolean,
): void {
  for (const [header, ref] of Object.entries(config.secretRefs)) {
    const held = Object.entries(previous?.config.secretRefs ?? {}).some(
      ([h, r]) => h.toLowerCase() === header.toLowerCase() && r === ref,
    );
    if (!held)
      throw new WireError(
        ErrorCodes.invalidInput,
        `config.secretRefs.${header}: this server holds no secret ${ref}; give the value in secretHeaders`,
        { field: `config.secretRefs.${header}` },
      );
    if (moved) {
      throw new WireError(
        ErrorCodes.invalidInput,
        `config.secretRefs.${header}: a secret stays with the origin it was given for; give the value again in secretHeaders for the new URL`,
        {
          field: `config.secretRefs.${header}`,
        },
      );
    }
  }
}

/** `gh` + `X-Token` and `gh-x` + `Token` both make `mcp-gh-x-token`: two servers never share one. */
async function refuseSharedSecretNames(
  deps: Pick<ServersDeps, 'servers'>,
  account: string,
  name: string,
  sealed: Record<string, string>,
  trx: Trx,
): Promise<void> {
  if (Object.keys(sealed).length === 0) return;
  const others = (await deps.servers.list(account, trx)).filter((s) => s.name !== name);
  for (const header of Object.keys(sealed)) {
    const secretName = headerSecretName(name, header);
    const owner = others.find((o) => Object.values(o.config.secretRefs ?? {}).includes(secretName));
    if (owner !== undefined) {
      throw new WireError(
        ErrorCodes.conflict,
        `config.secretHeaders.${header}: its secret name ${secretName} is used by server ${owner.name}`,
        {
          field: `config.secretHeaders.${header}`,
        },
      );
    }
  }
}

/**
 * Seals the server's secret headers and answers the `secretRefs` its stored config keeps: headers
 * given again (and the bearer token, its `Authorization` header) are re-sealed for `origin`; ones
 * not given again keep their stored value unless the server `moved` (then they are dropped and
 * named in `droppedHeaders`); secrets it owned that the new config no longer uses are deleted.
 */
export async function sealServerSecrets(
  deps: Pick<ServersDeps, 'servers' | 'secrets'>,
  target: { account: string; name: string; origin: string; moved: boolean },
  config: ValidServerConfig,
  previous: McpServerRecord | null,
  trx: Trx,
): Promise<{ secretRefs: Record<string, string>; droppedHeaders: string[] }> {
  const { account, name, origin, moved } = target;
  // The bearer token is the server's `Authorization` secret header: sealed, never shown again.
  const sealed = withBearerToken(config, previous?.config);
  await refuseSharedSecretNames(deps, account, name, sealed, trx);
  const secretRefs: Record<string, string> = { ...config.secretRefs };
  const droppedHeaders: string[] = [];
  for (const [header, ref] of Object.entries(previous?.config.secretRefs ?? {})) {
    if (
      !(header in secretRefs) &&
      !(header in config.headers) &&
      !(header in sealed) &&
      isOwnSecretRef(name, header, ref) &&
      keepsStoredHeader(header, config, previous?.config)
    ) {
      if (moved) droppedHeaders.push(header);
      else secretRefs[header] = ref;
    }
  }
  for (const [header, value] of Object.entries(sealed)) {
    const secretName = headerSecretName(name, header);
    await deps.secrets.put(account, secretName, value, origin, trx);
    secretRefs[header] = secretName;
  }
  // Secrets this server owned that its new config no longer uses go with the old config.
  const kept = new Set(Object.values(secretRefs));
  const unused = previous ? ownedSecretNames(name, previous.config).filter((n) => !kept.has(n)) : [];
  await deps.secrets.deleteNamed(account, unused, trx);
  return { secretRefs, droppedHeaders };
}
