import type { TokenGrant } from './agent-tokens.js';
import type { ToolSets } from './tool-sets.js';

const KEEPALIVE_MS = 15_000;
const SSE_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' };

/**
 * A 2025 client's GET notification stream (the stateless legacy serving has none of its own): an
 * SSE stream on which `notifications/tools/list_changed` is sent when the agent's tool set changes,
 * with a keepalive comment every 15 s. How many may be open, and when one ends before its client
 * closes it, is `StreamSlots`' (./stream-slots.ts).
 */
export class LegacyStreams {
  constructor(private readonly toolSets: ToolSets) {}

  /** The stream of the grant's agent, ended when `signal` aborts or its reader cancels it. */
  stream(grant: TokenGrant, signal: AbortSignal): Response {
    const enc = new TextEncoder();
    const toolSets = this.toolSets;
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
        const unwatch = toolSets.watch(grant.account, grant.agent, () => send(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' })}\n\n`));
        const keepalive = setInterval(() => send(': keepalive\n\n'), KEEPALIVE_MS);
        let done = false;
        cleanup = () => {
          if (done) return;
          done = true;
          unwatch();
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
