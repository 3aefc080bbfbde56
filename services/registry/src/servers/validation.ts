import { invalidInput, type McpServerConfigInput } from '@mcpx/contracts';
import { validateServerName, type ToolNameStyle } from '@mcpx/domain';
import type { OutboundPolicy } from '@mcpx/config';
import { applyAuthMethod, isAuthMethod } from '../credentials/auth-method.js';
import { headerSecretName, isOwnSecretRef } from '../credentials/server-headers.js';
import type { ValidServerConfig } from '../credentials/valid-server-config.js';
import { isPlainObject, onlyKeys } from '../shared/field-checks.js';
import { HEADER_NAME_RE, MAX_HEADERS, MAX_HEADER_VALUE_BYTES, RESERVED_HEADERS } from '@mcpx/console';

/** An agent may be granted at most 16 servers (docs/limits.md#servers-and-agents). */
export const MAX_URL_BYTES = 2048;
const SECRET_NAME_RE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;
// The header rule is the console's form's too: one definition, in a file the browser loads as it is.
export { MAX_HEADERS, MAX_HEADER_VALUE_BYTES };

export function validateServerNameInput(name: unknown, style: ToolNameStyle): string {
  if (typeof name !== 'string') throw invalidInput('name', 'must be a string');
  const problem = validateServerName(name, style);
  if (problem !== null) throw invalidInput('name', problem);
  return name;
}

/** Whether plain http may be used for this URL's host under the outbound policy. */
export function httpAllowed(url: URL, policy: OutboundPolicy): boolean {
  if (policy.profile === 'local') return true;
  return policy.allowHttpHosts.includes(url.host) || policy.allowHttpHosts.includes(url.hostname);
}

function validateHeaderMap(value: unknown, field: string): Record<string, string> {
  if (value === undefined) return {};
  if (!isPlainObject(value)) throw invalidInput(field, 'must be an object of header name → value');
  const out: Record<string, string> = {};
  for (const [name, v] of Object.entries(value)) {
    if (!HEADER_NAME_RE.test(name))
      throw invalidInput(`${field}.${name.slice(0, 64)}`, 'header names are letters, digits and -');
    if (RESERVED_HEADERS.has(name.toLowerCase()))
      throw invalidInput(`${field}.${name}`, 'is set by the transport and cannot be configured');
    if (typeof v !== 'string') throw invalidInput(`${field}.${name}`, 'must be a string');
    // The value is never echoed: it may be a secret.
    if (/[\r\n\0]/.test(v)) throw invalidInput(`${field}.${name}`, 'must not contain CR, LF or NUL');
    if (Buffer.byteLength(v, 'utf8') > MAX_HEADER_VALUE_BYTES)
      throw invalidInput(`${field}.${name}`, `must be at most ${MAX_HEADER_VALUE_BYTES} bytes`);
    out[name] = v;
  }
  return out;
}

/**
 * Validates SetMcpServer's config; every error names its field and never echoes a value. Given
 * the server's `name`, `secretRefs` may name only the server's own secrets
 * (`mcp-<server>-<header>`): another server's secret would follow this server's URL.
 */
export function validateServerConfig(config: unknown, policy: OutboundPolicy, name?: string): ValidServerConfig {
  if (!isPlainObject(config)) throw invalidInput('config', 'must be an object');
  onlyKeys(config, ['url', 'transport', 'headers', 'secretHeaders', 'secretRefs', 'auth', 'token', 'oauth'], 'config');
  const input = config as Partial<McpServerConfigInput> & Record<string, unknown>;
  if (typeof input.url !== 'string' || input.url === '') throw invalidInput('config.url', 'is required');
  if (Buffer.byteLength(input.url, 'utf8') > MAX_URL_BYTES)
    throw invalidInput('config.url', `must be at most ${MAX_URL_BYTES} bytes`);
  let url: URL;
  try {
    url = new URL(input.url);
  } catch {
    throw invalidInput('config.url', 'is not a valid URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw invalidInput('config.url', 'must be an http(s) URL');
  if (url.username !== '' || url.password !== '')
    throw invalidInput('config.url', 'must not carry credentials; use a secret header');
  if (url.protocol === 'http:' && !httpAllowed(url, policy)) {
    throw invalidInput('config.url', 'must use https (plain http is allowed only for hosts the operator lists)');
  }
  if (input.transport !== undefined && input.transport !== 'http' && input.transport !== 'sse') {
    throw invalidInput('config.transport', 'must be http or sse');
  }
  if (input.auth !== undefined && !isAuthMethod(input.auth))
    throw invalidInput('config.auth', 'must be oauth, bearer, headers or none (or absent)');
  const headers = validateHeaderMap(input.headers, 'config.headers');
  const secretHeaders = validateHeaderMap(input.secretHeaders, 'config.secretHeaders');
  const secretRefs: Record<string, string> = {};
  if (input.secretRefs !== undefined) {
    if (!isPlainObject(input.secretRefs))
      throw invalidInput('config.secretRefs', 'must be an object of header name → secret name');
    for (const [header, ref] of Object.entries(input.secretRefs)) {
      if (!HEADER_NAME_RE.test(header))
        throw invalidInput(`config.secretRefs.${header.slice(0, 64)}`, 'header names are letters, digits and -');
      if (typeof ref !== 'string' || !SECRET_NAME_RE.test(ref))
        throw invalidInput(`config.secretRefs.${header}`, 'must name a secret');
      if (name !== undefined && !isOwnSecretRef(name, header, ref)) {
        throw invalidInput(
          `config.secretRefs.${header}`,
          `may name only this server's own secret for the header (${headerSecretName(name, header)}); give another value in secretHeaders`,
        );
      }
      secretRefs[header] = ref;
    }
  }
  const distinct = new Set(
    [...Object.keys(headers), ...Object.keys(secretHeaders), ...Object.keys(secretRefs)].map((h) => h.toLowerCase()),
  );
  if (distinct.size > MAX_HEADERS) throw invalidInput('config.headers', `at most ${MAX_HEADERS} headers`);
  const valid: ValidServerConfig = {
    url: url.toString(),
    ...(input.transport ? { transport: input.transport } : {}),
    headers,
    secretHeaders,
    secretRefs,
    ...(input.auth ? { auth: input.auth } : {}),
  };
  return applyAuthMethod(valid, input.token);
}
