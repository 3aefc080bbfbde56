import type { TokenGrant } from './agent-tokens.js';
import type { ToolSets } from './tool-sets.js';

/** Legacy GET streams one instance keeps open at once (each holds a socket). */
const MAX_LEGACY_STREAMS = 4_096;
const KEEPALIVE_MS = 15_000;
const SSE_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' };

/** Why a stream was not opened: the limit that is full. */
export interface StreamRefusal {
  refused: 'streams_per_instance';
}

/**
 * A 2025 client's GET notification stream (the stateless legacy serving has none of its own): an
 * SSE stream on which `notifications/tools/list_changed` is sent when the agent's tool set changes,
 * with a keepalive comment every 15 s.
 */
export class LegacyStreams {
  private open = 0;

  constructor(private readonly toolSets: ToolSets) {}

  /** The stream of the grant's agent, ended when `signal` aborts; or the limit that refuses it. */
  stream(grant: TokenGrant, signal: AbortSignal): Response | StreamRefusal {
    if (this.open >= MAX_LEGACY_STREAMS) return { refused: 'streams_per_instance' };
    this.open++;
    const enc = new TextEncoder();
    const toolSets = this.toolSets;
    let cleanup = (): void => {};
    const onClosed = (): void => {
      this.open--;
    };
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
          onClosed();
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
