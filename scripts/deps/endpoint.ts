// Where a dependency is expected to listen, read from its configured URL.
import { isIP } from 'node:net';
import type { DependencyName, Endpoint } from './types.js';

/** Host and port of a configured URL (a bare `host:port` is accepted); throws on a URL it cannot parse. */
export function parseEndpoint(name: DependencyName, label: string, raw: string, defaultPort: number): Endpoint {
  const text = raw.trim();
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `${name}://${text}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    throw new Error(`${label}: cannot parse the URL ${JSON.stringify(redactUrl(text))}`);
  }
  const host = url.hostname.replace(/^\[|\]$/g, '') || '127.0.0.1';
  return { name, label, host, port: url.port ? Number(url.port) : defaultPort, shownUrl: redactUrl(text) };
}

function redactUrl(raw: string): string {
  return raw.replace(/\/\/([^/@]*)@/, (_m, userinfo: string) => `//${userinfo.split(':')[0] ?? ''}@`);
}

export function isLocalHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '0.0.0.0' || host.startsWith('127.');
}

/** Address a locally started server binds: the URL's IP literal, else loopback. */
export function bindAddress(host: string): string {
  return isIP(host) !== 0 && host !== '0.0.0.0' ? host : '127.0.0.1';
}
