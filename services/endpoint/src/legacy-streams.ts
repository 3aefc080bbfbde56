import type { TokenGrant } from './agent-tokens.js';
import type { LegacySubscriptions, StreamMessage } from './legacy-subscriptions.js';
import type { TaskStatusRelay } from './task-status.js';
import type { ToolSets } from './tool-sets.js';

/** What a GET stream sends besides its keepalive. */
export interface LegacyStreamsDeps {
  toolSets: ToolSets;
  /** Resource subscriptions and the face's servers' list changes (./legacy-subscriptions.ts). */
  legacySubscriptions?: LegacySubscriptions;
  /** `notifications/tasks/status` of the token's tasks (./task-status.ts). */
  taskStatus?: TaskStatusRelay;
}

const KEEPALIVE_MS = 15_000;
const SSE_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' };

/**
 * A 2025 client's GET notification stream (the stateless legacy serving has none of its own): an
 * SSE stream on which `notifications/tools/list_changed` is sent when the agent's tool set changes,
 * and (./legacy-subscriptions.ts) the updates of the resources this client subscribed to and the
 * list changes its face's servers announce, the status of the token's tasks (./task-status.ts), with a keepalive comment every 15 s. How many may be
 * open, and when one ends before its client closes it, is `StreamSlots`' (./stream-slots.ts).
 */
export class LegacyStreams {
  private readonly toolSets: ToolSets;
  private readonly subscriptions?: LegacySubscriptions;
  private readonly taskStatus?: TaskStatusRelay;

  constructor(
    deps: LegacyStreamsDeps,
    /** Told of each per-server face's stream ended because its server is no longer granted (a metric). */
    private readonly onUngranted: () => void = () => {},
  ) {
    this.toolSets = deps.toolSets;
    this.subscriptions = deps.legacySubscriptions;
    this.taskStatus = deps.taskStatus;
  }

  /**
   * The stream of the grant's agent on a face (`face`: the per-server face's server) for the
   * client of `session` (its `Mcp-Session-Id`, '' for none), ended when `signal` aborts or its
   * reader cancels it, and on a per-server face when the agent is no longer granted its server.
   */
  stream(grant: TokenGrant, face: string | undefined, session: string, signal: AbortSignal): Response {
    const enc = new TextEncoder();
    const toolSets = this.toolSets;
    const subscriptions = this.subscriptions;
    const taskStatus = this.taskStatus;
    const onUngranted = this.onUngranted;
    let done = false;
    let cleanup = (): void => {};
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        const send = (text: string): void => {
          try {
            controller.enqueue(enc.encode(text));
          } catch {
            cleanup();
          }
        };
        const message = (m: StreamMessage): void =>
          send(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', ...m })}\n\n`);
        const listChanged = (): void => message({ method: 'notifications/tools/list_changed' });
        // On a per-server face, a change may be the end of the grant of its server (or of the
        // agent): the face serves nothing any more, so its stream ends with a last comment, as
        // the face's handler ends its listen streams (face-handlers.ts), instead of staying open
        // and silent. A set that cannot be read now is told as a change, as on the merged face.
        const changed =
          face === undefined
            ? listChanged
            : (): void => {
                toolSets.get(grant.account, grant.agent).then(
                  (set) => {
                    if (set !== null && set.granted.has(face)) return listChanged();
                    if (done) return;
                    onUngranted();
                    send(': server not granted\n\n');
                    cleanup();
                  },
                  () => listChanged(),
                );
              };
        const unwatch = toolSets.watch(grant.account, grant.agent, changed);
        const detach = subscriptions?.stream(grant, face, session, message) ?? ((): void => {});
        const unrelay = taskStatus?.stream(grant, face, message) ?? ((): void => {});
        const keepalive = setInterval(() => send(': keepalive\n\n'), KEEPALIVE_MS);
        cleanup = () => {
          if (done) return;
          done = true;
          unwatch();
          detach();
          unrelay();
          clearInterval(keepalive);
          try {
            controller.close();
          } catch {
            // already closed
          }
        };
        signal.addEventListener('abort', () => cleanup(), { once: true });
        send(': open\n\n');
      },
      cancel() {
        cleanup();
      },
    });
    return new Response(body, { status: 200, headers: SSE_HEADERS });
  }
}
