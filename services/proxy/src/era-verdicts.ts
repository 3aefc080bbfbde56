import { authContextOf } from '@mcpx/contracts';
import { readEraVerdict, type ProxyReads, type ServerCredentials } from '@mcpx/stored';
import type { EraVerdict } from '@mcpx/mcp-client';

/** The auth context a verdict is keyed by: one copy, in `@mcpx/contracts`, shared with the other service. */
export { authContextOf };

const authContexts = new WeakMap<ServerCredentials, string>();

/**
 * The auth context of a server's credentials as the catalog read them, hashed once per reading
 * (the catalog keeps one until the server's event): each new run's connection to the server then
 * costs no hash and holds the same string as the others.
 */
export function authContextFor(entry: ServerCredentials): string {
  let ctx = authContexts.get(entry);
  if (ctx === undefined) authContexts.set(entry, (ctx = authContextOf(entry.url, entry.headers)));
  return ctx;
}

/** Where a pool finds the era verdict of a server for an auth context, and tells what it learnt. */
export interface EraVerdictSource {
  /** The verdict to connect with, or undefined (the connect probes). */
  get(account: string, server: string, authContext: string): Promise<EraVerdict | undefined>;
  /** A verdict a connect probed for (none known, or the known one failed and was re-probed). */
  learned(account: string, server: string, authContext: string, verdict: EraVerdict): void;
}

/** Verdicts kept per instance at most (the oldest goes first). */
const MAX_VERDICTS = 10_000;

/**
 * Verdicts this instance has seen, in memory. Without a store behind it, each instance probes a
 * server once per auth context and reuses the verdict for every later run.
 */
export class MemoryEraVerdicts implements EraVerdictSource {
  private readonly known = new Map<string, EraVerdict>();

  async get(account: string, server: string, authContext: string): Promise<EraVerdict | undefined> {
    return this.now(account, server, authContext);
  }

  /** The known verdict, with no I/O. */
  now(account: string, server: string, authContext: string): EraVerdict | undefined {
    return this.known.get(key(account, server, authContext));
  }

  learned(account: string, server: string, authContext: string, verdict: EraVerdict): void {
    const k = key(account, server, authContext);
    this.known.delete(k);
    this.known.set(k, verdict);
    if (this.known.size > MAX_VERDICTS) this.known.delete(this.known.keys().next().value as string);
  }
}

/**
 * The registry's stored verdicts (`registry.era_verdicts`, read, never written: what a proxy
 * learns goes to the registry on `mcp.proxy.tools.observed`), in front of them what this instance
 * learnt. So every instance connects to a server the registry has discovered with no probe.
 */
export class StoredEraVerdicts implements EraVerdictSource {
  private readonly memory = new MemoryEraVerdicts();

  constructor(private readonly db: ProxyReads) {}

  async get(account: string, server: string, authContext: string): Promise<EraVerdict | undefined> {
    const hit = this.memory.now(account, server, authContext);
    if (hit !== undefined) return hit;
    // The registry's own reading of it (`@mcpx/stored`); a failed read costs a probe, never the call.
    const stored = await readEraVerdict(this.db, account, server, authContext).catch(() => undefined);
    if (stored === undefined) return undefined;
    const verdict = asVerdict(stored);
    if (verdict !== undefined) this.memory.learned(account, server, authContext, verdict);
    return verdict;
  }

  learned(account: string, server: string, authContext: string, verdict: EraVerdict): void {
    this.memory.learned(account, server, authContext, verdict);
  }
}

function key(account: string, server: string, authContext: string): string {
  return `${account}\u0000${server}\u0000${authContext}`;
}

/** A stored verdict of a known shape (the registry checked it before storing; a bad row is ignored). */
function asVerdict(value: unknown): EraVerdict | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  const v = value as { era?: unknown; protocolVersion?: unknown; transport?: unknown; discover?: unknown };
  if (typeof v.protocolVersion !== 'string') return undefined;
  if (v.era === 'legacy' && (v.transport === 'http' || v.transport === 'sse')) return value as EraVerdict;
  if (v.era === 'modern' && v.discover !== null && typeof v.discover === 'object') return value as EraVerdict;
  return undefined;
}
