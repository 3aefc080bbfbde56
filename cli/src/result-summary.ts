// What `mcpx call` prints of a result besides its text: one short line for the structured
// content and one for the other blocks (images, audio, resources), never their bytes. A file
// read's structured content can be 130 KB of base64; `--json` keeps the whole result.
import type { ProxyResult } from '@mcpx/domain';

/** How many of an object's keys the line names before it says "…". */
const MAX_KEYS = 6;

function size(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

/** A value's shape in a word: `text (12 chars)`, `3 items`, `{…}`, `42`. */
function shape(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return `${value.length} item${value.length === 1 ? '' : 's'}`;
  if (typeof value === 'string')
    return value.length <= 24 && !/[\n\r]/.test(value) ? JSON.stringify(value) : `text (${value.length} chars)`;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (typeof value === 'object') return `{${Object.keys(value).length} fields}`;
  return typeof value;
}

/** `structured content (61 B): charts 1, files 3 items` — the top-level fields, bounded. */
export function structuredLine(value: unknown): string {
  const bytes = Buffer.byteLength(JSON.stringify(value) ?? '', 'utf8');
  const head = `structured content (${size(bytes)})`;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return `${head}: ${shape(value)}`;
  const entries = Object.entries(value);
  const named = entries.slice(0, MAX_KEYS).map(([k, v]) => `${k.length > 32 ? `${k.slice(0, 32)}…` : k} ${shape(v)}`);
  if (entries.length > MAX_KEYS) named.push(`… ${entries.length - MAX_KEYS} more`);
  return `${head}: ${named.length > 0 ? named.join(', ') : 'empty'}`;
}

/** `1 image (image/png, 68 B), 1 audio, 2 embedded resources, 1 resource link`, or undefined when none. */
export function blocksLine(r: ProxyResult): string | undefined {
  const counts = new Map<string, number>();
  const count = (what: string) => counts.set(what, (counts.get(what) ?? 0) + 1);
  const images = r.images ?? [];
  if (r.content !== undefined) {
    for (const block of r.content)
      if (block.type !== 'text' && block.type !== 'image')
        count(
          block.type === 'resource_link'
            ? 'resource link'
            : block.type === 'resource'
              ? 'embedded resource'
              : block.type,
        );
  }
  const parts: string[] = [];
  if (images.length > 0) {
    const bytes = images.reduce((n, i) => n + Math.floor((i.data.length * 3) / 4), 0);
    const types = [...new Set(images.map((i) => i.mimeType))].join(', ');
    parts.push(`${images.length} image${images.length === 1 ? '' : 's'} (${types}, ${size(bytes)})`);
  }
  for (const [what, n] of counts) parts.push(`${n} ${what}${n === 1 ? '' : 's'}`);
  return parts.length > 0 ? parts.join(', ') : undefined;
}

/**
 * A result as a person reads it: its label, its text, then one line each for the structured
 * content and the other blocks, then the duration. The rest is in `--json`.
 */
export function renderResult(r: ProxyResult): string {
  const lines = [r.summary];
  if (r.text !== undefined) lines.push(r.text);
  const extra: string[] = [];
  if (r.result !== undefined) extra.push(structuredLine(r.result));
  const blocks = blocksLine(r);
  if (blocks !== undefined) extra.push(blocks);
  for (const e of extra) lines.push(`[${e}]`);
  lines.push(`(${r.durationMs} ms${extra.length > 0 ? '; --json shows the whole result' : ''})`);
  return lines.join('\n');
}
