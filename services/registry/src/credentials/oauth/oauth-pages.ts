import { createHash } from 'node:crypto';
import type { ServerResponse } from 'node:http';

/**
 * A page that connected closes its window: the console's popup (the console learns the outcome
 * from its event stream). Browsers refuse to close a tab the owner opened, which then keeps the
 * page. The one inline script is allowed by its hash; nothing else runs or loads.
 */
const CLOSE_SCRIPT = 'window.close()';
const CSP = `default-src 'none'; script-src 'sha256-${createHash('sha256').update(CLOSE_SCRIPT).digest('base64')}'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`;

/** Headers every OAuth answer carries: not cached, no referrer (the URLs carry a code, a state or a ticket). */
export const OAUTH_PAGE_HEADERS = {
  'cache-control': 'no-store',
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
} as const;

/** A small HTML page under a strict policy; `close` adds the script that closes the popup. */
export function oauthPage(
  res: ServerResponse,
  status: number,
  title: string,
  text: string,
  opts: { close?: boolean; setCookie?: string } = {},
): void {
  const script = opts.close === true ? `<script>${CLOSE_SCRIPT}</script>` : '';
  const body = `<!doctype html><meta charset="utf-8"><title>${escapeHtml(title)}</title><h1>${escapeHtml(title)}</h1><p>${escapeHtml(text)}</p>${script}`;
  res.writeHead(status, {
    'content-type': 'text/html; charset=utf-8',
    'content-security-policy': CSP,
    ...OAUTH_PAGE_HEADERS,
    ...(opts.setCookie !== undefined ? { 'set-cookie': opts.setCookie } : {}),
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
