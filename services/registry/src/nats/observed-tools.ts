import type { Subscription } from '@nats-io/transport-node';
import type { Counter, Meter } from '@opentelemetry/api';
import type { Bus } from '@mcpx/bus';
import { QueueGroups, decodeToolsObserved, type ToolsObserved } from '@mcpx/contracts';
import type { Logger } from '@mcpx/log';
import type { Discovery, DiscoveryTarget } from '../discovery/discovery.js';
import { loweredLevels } from './lowered-levels.js';
import { pinModeOf } from '../review/pin-policy.js';
import { sanitizeTools, screenTools, toolsHash } from '../catalog/remote-tools.js';
import type { McpServerRecord } from '../catalog/mcp-servers.repository.js';

/** A proxy's list that would lower a level starts at most one discovery of that server per this long (per instance). */
export const REDISCOVERY_COOLDOWN_MS = 30_000;
/** Servers whose cooldown this instance remembers (the oldest is forgotten first). */
const COOLDOWN_ENTRIES = 10_000;

export interface ObservedToolsDeps {
  bus: Bus;
  discovery: Discovery;
  log: Logger;
  meter: Meter;
  /** The account's mcp_servers rows (what `Discovery` records to unless told otherwise). */
  servers: { find(account: string, name: string): Promise<McpServerRecord | null> };
  /** Where a server without a row is looked up, in order (the built-ins). */
  others?: readonly DiscoveryTarget[];
}

/** What became of one message: recorded, re-discovered by the registry itself, held back by the cooldown, or none of these. */
type Outcome = 'recorded' | 'rediscovered' | 'held' | 'unknown_server' | 'malformed';

/**
 * Quiet discovery: a proxy lists tools whenever it opens a connection and publishes them; one
 * registry instance (queue group) records them like any discovery, so a server that added tools
 * yesterday is current the next time any agent calls it. A server without an mcp_servers row is
 * looked up in `others` (the built-ins), so theirs are recorded too. A proxy that had to probe a
 * server's era sends the verdict with its auth context (extra fields are allowed), and it is
 * stored for every instance.
 *
 * The message is strictly decoded (`decodeToolsObserved`) in a guarded callback: a malformed one
 * is logged without its bytes and dropped, and the connection goes on reading.
 *
 * A list from the bus is never taken at its word when it would lower a tool's inherited level from
 * `always_ask` to `act` (a `destructiveHint` gone): whoever can publish on the subject could then
 * take the human out of the loop. Such a list is not recorded; the registry discovers the server
 * itself instead (at most once per server per {@link REDISCOVERY_COOLDOWN_MS} on this instance,
 * so a flood of forgeries costs one listing), and records what the server itself says.
 *
 * Nor is a pinned server's list that differs from its last one: a change held for review (and the
 * review it asks a person for) comes only from the registry's own connection to the server, never
 * from a message on the bus, under the same cooldown.
 */
export function consumeObservedTools(deps: ObservedToolsDeps): Subscription {
  const { bus, discovery, log } = deps;
  const others = deps.others ?? [];
  const counter: Counter = deps.meter.createCounter('mcpx_observed_tools_total', {
    description:
      "Proxies' tool lists by outcome: recorded, rediscovered (it would lower a level: the registry listed the server itself), held (same, within the cooldown), unknown_server, malformed",
  });
  const cooldowns = new Cooldowns();
  const mayRediscover = (key: string): boolean => cooldowns.start(key);

  const record = async (event: ToolsObserved): Promise<Outcome> => {
    const found = await locateServer(deps, event.account, event.server);
    if (found === null) return 'unknown_server';
    const lowered = loweredLevels(found.server.tools, event.tools, found.target?.kind === 'builtin');
    const pinnedChange =
      found.target === undefined &&
      pinModeOf(found.server.config) !== 'off' &&
      toolsHash(screenTools(sanitizeTools(event.tools)).kept) !== (found.server.discoveredHash ?? '');
    if (pinnedChange) {
      if (!mayRediscover(`${event.account}:${event.server}`)) return 'held';
      await discovery.discover(found.server, 'changed');
      return 'rediscovered';
    }
    if (lowered.length > 0) {
      const key = `${event.account}:${event.server}`;
      if (!mayRediscover(key)) return 'held';
      log.warn('a tools-observed list would lower tool levels: discovering the server instead', {
        account: event.account,
        server: event.server,
        tools: lowered.slice(0, 20),
      });
      await discovery.discover(found.server, 'changed', found.target);
      return 'rediscovered';
    }
    // A verdict the proxy probed for rides along; discovery checks it before storing it.
    const reported = { verdict: event.verdict, authContext: event.authContext };
    const saved = await discovery.observed(event.account, event.server, event.tools, event.transport, others, reported);
    return saved === null ? 'unknown_server' : 'recorded';
  };

  /** Strictly decoded; a malformed message is counted here, then logged and dropped by the bus. */
  const decode = (msg: { data: Uint8Array }): ToolsObserved => {
    try {
      return decodeToolsObserved(msg.data);
    } catch (e) {
      counter.add(1, { outcome: 'malformed' });
      throw e;
    }
  };
  return bus.listen(
    bus.subjects.toolsObserved,
    decode,
    (event) =>
      void record(event).then(
        (outcome) => counter.add(1, { outcome }),
        (e: unknown) =>
          log.error('quiet discovery failed', { account: event.account, server: event.server, err: e as Error }),
      ),
    { what: 'tools-observed message', queue: QueueGroups.registry },
  );
}

/** The server a list names: the account's own (`mcp_servers`), else a built-in or vendor one (`others`). */
async function locateServer(
  deps: ObservedToolsDeps,
  account: string,
  name: string,
): Promise<{ server: McpServerRecord; target?: DiscoveryTarget } | null> {
  const row = await deps.servers.find(account, name);
  if (row !== null) return { server: row };
  for (const target of deps.others ?? []) {
    const server = await target.find(account, name);
    if (server !== null) return { server, target };
  }
  return null;
}

/** When this instance last started a discovery of each server (the oldest forgotten past {@link COOLDOWN_ENTRIES}). */
class Cooldowns {
  readonly #last = new Map<string, number>();

  /** Whether this instance may start a discovery of the server now (and notes that it does). */
  start(key: string): boolean {
    const now = Date.now();
    const last = this.#last.get(key);
    if (last !== undefined && now - last < REDISCOVERY_COOLDOWN_MS) return false;
    this.#last.delete(key);
    this.#last.set(key, now);
    if (this.#last.size > COOLDOWN_ENTRIES) {
      const oldest = this.#last.keys().next();
      if (oldest.done !== true) this.#last.delete(oldest.value);
    }
    return true;
  }
}
