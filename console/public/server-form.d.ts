/** See server-form.js. */
import type { ActionRequest } from './action-types.js';

export const AUTH_METHODS: readonly ['oauth', 'bearer', 'headers', 'none'];
export const OAUTH_GRANTS: readonly ['authorization_code', 'client_credentials'];
export const KEY_ALGS: readonly string[];
export const MAX_HEADERS: number;
export const MAX_HEADER_VALUE_BYTES: number;
export const MAX_CLIENT_ID_BYTES: number;
export const MAX_CLIENT_SECRET_BYTES: number;
export const MAX_PRIVATE_KEY_BYTES: number;
export const MAX_SCOPE_BYTES: number;
export function parseHeaderLines(text: string): {
  headers: Record<string, string>;
  errors: Array<{ line: number; message: string }>;
};
export function serverConfig(values: Record<string, string | undefined>): {
  config: ActionRequest<'SetMcpServer'>['config'];
  errors: Array<{ field: string; line?: number; message: string }>;
};
