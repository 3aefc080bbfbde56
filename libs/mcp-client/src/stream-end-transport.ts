import { randomUUID } from 'node:crypto';
import {
  ProtocolError,
  StreamableHTTPClientTransport,
  type JSONRPCMessage,
  type StreamableHTTPClientTransportOptions,
  type StreamableHTTPReconnectionOptions,
  type TransportSendOptions,
} from '@modelcontextprotocol/client';

/** Local, per-process, unguessable: a server cannot forge the "stream broke" error below. */
const BROKE_TOKEN = randomUUID();
const BROKE_KEY = 'mcpxResponseStreamBroke';

/** The SDK's reconnection defaults; `maxRetries` drops to 0 once the connection is modern. */
const RECONNECTION: StreamableHTTPReconnectionOptions = {
  initialReconnectionDelay: 1_000,
  maxReconnectionDelay: 30_000,
  reconnectionDelayGrowFactor: 1.5,
  maxRetries: 2,
};

/**
 * The SDK's Streamable HTTP client transport, told when a modern request's response stream ends
 * before its response. The SDK would otherwise wait for the request timeout (its Protocol does not
 * watch per-request streams) or, after a priming event, try to resume with `Last-Event-ID`, which
 * 2026-07-28 removed. Once {@link markModern} is called: no resumption, and a stream that ends or
 * breaks before the response settles that request at once with a local error that
 * {@link isResponseStreamBroken} recognises (`maybe_executed`: the server may have run it).
 * Legacy sessions are untouched.
 */
export class StreamEndAwareTransport extends StreamableHTTPClientTransport {
  readonly #reconnection: StreamableHTTPReconnectionOptions;
  #modern = false;
  readonly #pending = new Set<string | number>();
  #deliver: ((message: JSONRPCMessage) => void) | undefined;

  constructor(url: URL, opts: StreamableHTTPClientTransportOptions = {}) {
    const reconnection = { ...RECONNECTION };
    super(url, { ...opts, reconnectionOptions: reconnection });
    this.#reconnection = reconnection;
    // The Protocol installs its handler here; responses are noted on the way through.
    Object.defineProperty(this, 'onmessage', {
      configurable: true,
      enumerable: true,
      get: () => this.#deliver,
      set: (handler: ((message: JSONRPCMessage) => void) | undefined) => {
        this.#deliver =
          handler === undefined
            ? undefined
            : (message: JSONRPCMessage) => {
                if ('id' in message && !('method' in message) && message.id !== undefined)
                  this.#pending.delete(message.id);
                handler(message);
              };
      },
    });
  }

  /** The connection is on the modern era: per-request streams are watched and never resumed. */
  markModern(): void {
    this.#modern = true;
    this.#reconnection.maxRetries = 0;
  }

  override async send(message: JSONRPCMessage | JSONRPCMessage[], options?: TransportSendOptions): Promise<void> {
    if (
      !this.#modern ||
      Array.isArray(message) ||
      !('method' in message) ||
      !('id' in message) ||
      options?.onRequestStreamEnd !== undefined
    ) {
      await super.send(message, options);
      return;
    }
    const id = message.id;
    this.#pending.add(id);
    try {
      await super.send(message, { ...options, onRequestStreamEnd: () => this.#ended(id) });
    } catch (error) {
      this.#pending.delete(id);
      throw error;
    }
  }

  #ended(id: string | number): void {
    if (!this.#pending.delete(id)) return;
    this.#deliver?.({
      jsonrpc: '2.0',
      id,
      error: {
        code: -32603,
        message: 'the response stream ended before the result',
        data: { [BROKE_KEY]: BROKE_TOKEN },
      },
    });
  }
}

/** Whether `err` is the local "response stream ended before the result" of {@link StreamEndAwareTransport}. */
export function isResponseStreamBroken(err: unknown): boolean {
  if (!(err instanceof ProtocolError)) return false;
  const data = err.data as Record<string, unknown> | undefined;
  return data !== null && typeof data === 'object' && data[BROKE_KEY] === BROKE_TOKEN;
}
