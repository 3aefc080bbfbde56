import { readFile } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import { dirname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';

/** A server's header rule, which the console's form and the registry's validation share. */
export { HEADER_NAME_RE, MAX_HEADERS, MAX_HEADER_VALUE_BYTES, RESERVED_HEADERS } from '../public/header-rules.js';

const PUBLIC = join(dirname(fileURLToPath(import.meta.url)), '..', 'public');
const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/** The endpoint's port when the operator names none (`ENDPOINT_PORT`'s default). */
const DEFAULT_ENDPOINT_PORT = 8083;

/** What the console learns of the deployment, served as `/console/settings.json`. */
export interface ConsoleSettings {
  /** The agent endpoint: its public URL (`ENDPOINT_PUBLIC_URL`), else its port (`ENDPOINT_PORT`) on the page's host. */
  endpoint: { publicUrl?: string; port?: number };
}

/**
 * The settings document: the endpoint's base URL when the operator gave one, else its port, for
 * the page to put on the host it was loaded from. Public facts of the deployment, no secret.
 */
export function consoleSettingsDocument(settings: ConsoleSettings | undefined): {
  endpoint: { url: string | null; port: number };
} {
  return {
    endpoint: { url: settings?.endpoint.publicUrl ?? null, port: settings?.endpoint.port ?? DEFAULT_ENDPOINT_PORT },
  };
}

/**
 * Serves the web console (static files, no build step) under `/console/`. The console is a client
 * of the same signed action API as the CLI: it signs in the browser with the account key, so the
 * server holds nothing more for it. Returns false when the path is not the console's.
 */
export async function serveConsole(
  pathname: string,
  res: ServerResponse,
  settings?: ConsoleSettings,
): Promise<boolean> {
  if (pathname === '/' || pathname === '/console') {
    res.writeHead(302, { location: '/console/' });
    res.end();
    return true;
  }
  if (!pathname.startsWith('/console/')) return false;
  if (pathname === '/console/settings.json') {
    res.writeHead(200, {
      'content-type': 'application/json',
      'cache-control': 'no-cache',
      'x-content-type-options': 'nosniff',
    });
    res.end(JSON.stringify(consoleSettingsDocument(settings)));
    return true;
  }
  const rel = normalize(pathname.slice('/console/'.length) || 'index.html');
  if (rel.startsWith('..') || rel.includes('\0')) return false;
  const ext = rel.slice(rel.lastIndexOf('.'));
  const type = TYPES[ext];
  if (type === undefined) return false;
  try {
    const body = await readFile(join(PUBLIC, rel));
    res.writeHead(200, {
      'content-type': type,
      'cache-control': 'no-cache',
      // The OAuth popup needs nothing here: window.open is not a fetch, and the callback page
      // that closes it carries its own policy.
      'content-security-policy':
        "default-src 'self'; style-src 'self'; script-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
      'x-content-type-options': 'nosniff',
    });
    res.end(body);
    return true;
  } catch {
    return false;
  }
}
