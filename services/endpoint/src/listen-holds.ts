import type { McpHttpHandler } from '@modelcontextprotocol/server';
import type { TokenGrant } from './agent-tokens.js';
import type { FacedResource, Subscriptions } from './subscriptions.js';
import type { HoldTarget } from './upstream-holds.js';

/** What a 2026-07-28 listen asks (`params.notifications`), as far as it is read here. */
interface Filter {
  toolsListChanged?: unknown;
  promptsListChanged?: unknown;
  resourcesListChanged?: unknown;
  resourceSubscriptions?: unknown;
}

/** A listen opened: the request to hand to the SDK (its filter narrowed to what is held), and its end. */
export interface OpenedListen {
  body: unknown;
  release: () => void;
}

/** The filter of a `subscriptions/listen` body, or undefined when it is not one the SDK would take (it answers those). */
function filterOf(body: unknown): Filter | undefined {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return undefined;
  const m = body as { method?: unknown; params?: { notifications?: unknown } };
  const f = m.method === 'subscriptions/listen' ? m.params?.notifications : undefined;
  if (f === null || typeof f !== 'object' || Array.isArray(f)) return undefined;
  const rs = (f as Filter).resourceSubscriptions;
  if (rs !== undefined && (!Array.isArray(rs) || !rs.every((u) => typeof u === 'string'))) return undefined;
  return f;
}

/**
 * Holds what a `subscriptions/listen` of `grant` on a face asks before the SDK acknowledges it,
 * so the upstream subscriptions are open when the client hears the ack: each named resource
 * (mapped back to its server's URI; counted against the token's and account's bounds, refused
 * whole past one with `SubscriptionRefusal`), and the list changes of the face's servers when it
 * asks for any. A resource that cannot be held (unknown, not granted, a server without
 * subscriptions, a proxy that failed) is left out of the filter the SDK sees, so the
 * acknowledgement names exactly what will be delivered. Undefined when the body is not a listen.
 */
export async function openListen(
  subs: Subscriptions,
  grant: TokenGrant,
  face: string | undefined,
  handler: McpHttpHandler,
  body: unknown,
): Promise<OpenedListen | undefined> {
  const filter = filterOf(body);
  if (filter === undefined) return undefined;
  const asked = [...new Set((filter.resourceSubscriptions as string[] | undefined) ?? [])];
  const resolved = (await Promise.all(asked.map((u) => subs.resolve(grant, face, u)))).filter(
    (r): r is FacedResource => r !== undefined,
  );
  const lists =
    filter.toolsListChanged === true || filter.promptsListChanged === true || filter.resourcesListChanged === true;
  const servers = lists ? await subs.servers(grant, face) : [];
  // Counted after the last await that may throw: a refusal or a failure leaves no count behind.
  subs.take(grant, resolved.length);
  const held: HoldTarget[] = [];
  const fed: Array<() => void> = [];
  const hold = async (target: HoldTarget): Promise<boolean> => {
    try {
      await subs.holds.hold(target);
      held.push(target);
      fed.push(subs.feedHandler(handler, grant.account, grant.agent, face, target.server));
      return true;
    } catch {
      return false;
    }
  };
  // A server without list changes still has the agent's own tool set changes: the flags stay.
  await Promise.all(servers.map((s) => hold(subs.listsTarget(grant, s))));
  const honoured = await Promise.all(
    resolved.map(async (r) => ((await hold(subs.resourceTarget(grant, r))) ? r : undefined)),
  );
  const kept = honoured.filter((r): r is FacedResource => r !== undefined);
  subs.give(grant, resolved.length - kept.length);
  let released = false;
  const release = (): void => {
    if (released) return;
    released = true;
    for (const detach of fed) detach();
    for (const t of held) subs.holds.release(t);
    subs.give(grant, kept.length);
  };
  if (filter.resourceSubscriptions === undefined) return { body, release };
  const m = body as { params: { notifications: Filter } };
  const narrowed = {
    ...m,
    params: {
      ...m.params,
      notifications: { ...m.params.notifications, resourceSubscriptions: kept.map((r) => r.asClient) },
    },
  };
  return { body: narrowed, release };
}
