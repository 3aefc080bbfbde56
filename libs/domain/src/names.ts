import { ToolNameStyle } from './types.js';
import { sha256Hex } from './sha256.js';

/** Server names in `double_underscore` style (docs/names.md#server-names); they prefix every projected tool name. */
export const SERVER_NAME_RE = /^[a-z0-9][a-z0-9_-]{0,31}$/;
/** Server slugs in `prefixed` style (docs/names.md#server-names): a letter, then 1–30 of `[a-z0-9_]`. */
export const PREFIXED_SLUG_RE = /^[a-z][a-z0-9_]{1,30}$/;
/** Providers accept tool names of at most 64 characters (docs/names.md#tool-names-and-the-64-character-rule). */
export const TOOL_NAME_MAX_LENGTH = 64;
/** Hex digits of the first collision suffix (`_` + 6 hex). */
const HASH_HEX_MIN = 6;

/** A human error message for an invalid server name in `style`, or null when it is valid. */
export function validateServerName(name: string, style: ToolNameStyle): string | null {
  if (typeof name !== 'string' || name.length === 0) return 'server name is required';
  if (style === ToolNameStyle.prefixed) {
    if (!PREFIXED_SLUG_RE.test(name)) {
      return `invalid server slug "${clip(name)}": it must start with a letter and hold only lowercase letters, digits and underscores, 2 to 31 characters`;
    }
  } else if (!SERVER_NAME_RE.test(name)) {
    return `invalid server name "${clip(name)}": it must start with a lowercase letter or digit and hold only lowercase letters, digits, "_" and "-", at most 32 characters`;
  }
  // `__` separates server from tool in the default style; forbidding it in both keeps names readable.
  if (name.includes('__')) return `invalid server name "${clip(name)}": it must not contain "__"`;
  return null;
}

/** The remote name in `[A-Za-z0-9_-]`: other runs become `_`, edge `_` trimmed, `tool` if empty. */
export function sanitizeRemoteName(remote: string): string {
  const sanitized = remote.replace(/[^A-Za-z0-9_-]+/gu, '_').replace(/^_+|_+$/g, '');
  return sanitized === '' ? 'tool' : sanitized;
}

/** What every projected tool name of `server` starts with: `github__` or `mcp_acme_`. */
export function serverToolPrefix(server: string, style: ToolNameStyle): string {
  return style === ToolNameStyle.prefixed ? `mcp_${server}_` : `${server}__`;
}

/**
 * Projected tool names of one server's remote tools, keyed by remote name (first occurrence of a
 * duplicate wins; the map keeps first-occurrence order).
 *
 * Names are `prefix + sanitized`, capped at 64 characters. Remote names that land on the same
 * name after sanitising or truncation all get `_` + hex of sha-256(remote name), so no remote tool
 * silently wins over another, and the result depends only on the set of names, not their order.
 * A suffixed name can itself meet another name (a remote tool may literally be called `x_1a2b3c`);
 * every name still colliding then gets a longer hash, until all names are distinct.
 * Throws when `server` is too long to leave room for a tool name (longer than either grammar allows).
 */
export function projectToolNames(
  server: string,
  remoteNames: readonly string[],
  style: ToolNameStyle,
): Map<string, string> {
  const prefix = serverToolPrefix(server, style);
  const room = TOOL_NAME_MAX_LENGTH - prefix.length;
  if (room < HASH_HEX_MIN + 2) throw new Error(`server name too long to project tool names: ${clip(server)}`);
  // Hash lengths tried in turn; the last is as long as the shortest stem allows.
  const maxHex = room - 2;
  const hexLengths = [6, 8, 12, 16, 24, maxHex].filter((n) => n <= maxHex);

  const unique = [...new Set(remoteNames)];
  const stems = new Map<string, string>();
  const levels = new Map<string, number>();
  for (const remote of unique) {
    stems.set(remote, sanitizeRemoteName(remote));
    levels.set(remote, 0);
  }
  const hashes = new Map<string, string>();
  const candidate = (remote: string): string => {
    const stem = stems.get(remote)!;
    const level = levels.get(remote)!;
    if (level === 0) return prefix + stem.slice(0, room);
    let hash = hashes.get(remote);
    if (hash === undefined) {
      hash = sha256Hex(remote);
      hashes.set(remote, hash);
    }
    const hex = hexLengths[level - 1]!;
    return `${prefix}${stem.slice(0, room - hex - 1)}_${hash.slice(0, hex)}`;
  };

  let names: Map<string, string>;
  for (;;) {
    names = new Map(unique.map((remote) => [remote, candidate(remote)]));
    const byName = new Map<string, string[]>();
    for (const [remote, name] of names) {
      const group = byName.get(name);
      if (group) group.push(remote);
      else byName.set(name, [remote]);
    }
    let bumped = false;
    for (const group of byName.values()) {
      if (group.length < 2) continue;
      for (const remote of group) {
        const level = levels.get(remote)!;
        if (level < hexLengths.length) {
          levels.set(remote, level + 1);
          bumped = true;
        }
      }
    }
    if (!bumped) break;
  }

  // Only equal hash prefixes of `maxHex` (≥ 26) hex digits can still collide here, which takes
  // a sha-256 collision. Should it ever happen, the smaller remote name keeps the name so the map
  // stays injective and order-independent.
  const taken = new Map<string, string>();
  for (const remote of [...unique].sort(compareCodeUnits)) {
    const name = names.get(remote)!;
    if (!taken.has(name)) taken.set(name, remote);
  }
  const result = new Map<string, string>();
  for (const remote of unique) {
    const name = names.get(remote)!;
    if (taken.get(name) === remote) result.set(remote, name);
  }
  return result;
}

export function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function clip(s: string): string {
  return s.length > 40 ? `${s.slice(0, 40)}…` : s;
}
