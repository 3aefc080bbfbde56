import type { ServerResponse } from 'node:http';

/** Headers every answer of the authorization server carries: never cached, no referrer (URLs carry codes and nonces). */
export const NO_STORE_HEADERS = {
  'cache-control': 'no-store',
  pragma: 'no-cache',
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
} as const;

const CSP = "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** A small HTML page (no script) for a sign-in that cannot go back to its client. */
export function signInPage(
  res: ServerResponse,
  status: number,
  title: string,
  text: string,
  headers: Record<string, string> = {},
): void {
  const body = `<!doctype html><meta charset="utf-8"><title>${escapeHtml(title)}</title><h1>${escapeHtml(title)}</h1><p>${escapeHtml(text)}</p>`;
  res.writeHead(status, {
    'content-type': 'text/html; charset=utf-8',
    'content-security-policy': CSP,
    ...NO_STORE_HEADERS,
    ...headers,
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
}

/** A JSON answer (metadata, token responses and OAuth errors). */
export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const bytes = Buffer.from(JSON.stringify(body));
  res.writeHead(status, { 'content-type': 'application/json', ...headers, 'content-length': bytes.length });
  res.end(bytes);
}

/** A 302 to `location`. */
export function redirect(res: ServerResponse, location: string, headers: Record<string, string> = {}): void {
  res.writeHead(302, { location, ...NO_STORE_HEADERS, ...headers, 'content-length': 0 });
  res.end();
}
