import { invalidInput } from '@mcpx/contracts';
import { AuthMethods, BEARER_HEADER, effectiveAuth } from './auth-method.js';
import type { StoredServerConfig } from '../catalog/mcp-servers.repository.js';
import type { ValidServerConfig } from './valid-server-config.js';

const isBearerHeader = (header: string): boolean => header.toLowerCase() === BEARER_HEADER.toLowerCase();

/**
 * The headers SetMcpServer seals: the secret headers given, plus `Authorization: Bearer <token>`
 * under `bearer`. A bearer update without a token keeps the stored one; a bearer server without
 * either is refused (before anything is written). A server that moves to another origin without a
 * token is not refused: SetMcpServer drops the stored token (see `keepsStoredHeader`'s caller), and
 * the owner gives it again.
 */
export function withBearerToken(
  config: ValidServerConfig,
  previous: StoredServerConfig | undefined,
): Record<string, string> {
  if (config.auth !== AuthMethods.bearer) return config.secretHeaders;
  if (config.token !== undefined) return { ...config.secretHeaders, [BEARER_HEADER]: `Bearer ${config.token}` };
  const stored =
    previous !== undefined &&
    effectiveAuth(previous) === AuthMethods.bearer &&
    Object.keys(previous.secretRefs ?? {}).some(isBearerHeader);
  if (!stored) throw invalidInput('config.token', 'is required with auth bearer');
  return config.secretHeaders;
}

/**
 * Whether a secret header the server already holds, not given again, is kept. `none` keeps
 * nothing; a bearer token stays only while the server stays `bearer`, and a header named
 * `Authorization` from before does not become a bearer token.
 */
export function keepsStoredHeader(
  header: string,
  config: ValidServerConfig,
  previous: StoredServerConfig | undefined,
): boolean {
  if (config.auth === AuthMethods.none) return false;
  if (!isBearerHeader(header)) return true;
  const wasBearer = previous !== undefined && effectiveAuth(previous) === AuthMethods.bearer;
  return (config.auth === AuthMethods.bearer) === wasBearer;
}
