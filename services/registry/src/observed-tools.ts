import type { Subscription } from '@nats-io/transport-node';
import type { Bus } from '@mcpx/bus';
import { QueueGroups, decodePayload, type ToolsObserved } from '@mcpx/contracts';
import type { Logger } from '@mcpx/log';
import type { Discovery, DiscoveryTarget } from './discovery.js';

/**
 * Quiet discovery: a proxy lists tools whenever it opens a connection and publishes them; one
 * registry instance (queue group) records them like any discovery, so a server that added tools
 * yesterday is current the next time any agent calls it. A server without an mcp_servers row is
 * looked up in `others` (the built-ins), so theirs are recorded too. A proxy that had to probe a
 * server's era sends the verdict with its auth context, and it is stored for every instance.
 */
export function consumeObservedTools(bus: Bus, discovery: Discovery, log: Logger, others: readonly DiscoveryTarget[] = []): Subscription {
  return bus.nc.subscribe(bus.subjects.toolsObserved, {
    queue: QueueGroups.registry,
    callback: (err, msg) => {
      if (err) return;
      let event: ToolsObserved;
      try {
        event = decodePayload<ToolsObserved>(msg.data);
        if (typeof event.account !== 'string' || typeof event.server !== 'string' || !Array.isArray(event.tools)) throw new Error('bad shape');
      } catch {
        log.warn('dropped a malformed tools-observed message');
        return;
      }
      // A verdict the proxy probed for rides along; discovery checks it before storing it.
      const reported = { verdict: event.verdict, authContext: event.authContext };
      discovery.observed(event.account, event.server, event.tools, event.transport === 'sse' ? 'sse' : 'http', others, reported).catch((e: unknown) => {
        log.error('quiet discovery failed', { account: event.account, server: event.server, err: e as Error });
      });
    },
  });
}
