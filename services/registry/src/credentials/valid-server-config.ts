import type { Transport } from '@mcpx/contracts';
import type { AuthMethod } from './auth-method.js';

/** A server's config as SetMcpServer's validation (servers/validation.ts) returns it, before its secrets are sealed. */
export interface ValidServerConfig {
  url: string;
  transport?: Transport;
  headers: Record<string, string>;
  secretHeaders: Record<string, string>;
  secretRefs: Record<string, string>;
  /** As given (absent stays absent: the effective method is then derived, see `effectiveAuth`). */
  auth?: AuthMethod;
  /** `auth: 'bearer'` only; absent on an update keeps the stored token. */
  token?: string;
}
