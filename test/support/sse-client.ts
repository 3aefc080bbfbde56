import type { ApiClient } from './api-client.js';
import { eventually } from './system.js';

export interface SseEvent {
  event: string;
  data: any;
}

/**
 * The account's `GET /v1/events` stream read the way the console reads it: a signed
 * `SubscribeEvents` envelope in the query, events parsed as they arrive. `raw` keeps the text
 * exactly as received (for leak assertions).
 */
export class SseSubscriber {
  readonly events: SseEvent[] = [];
  raw = '';
  private readonly abort = new AbortController();
  private reading: Promise<void> = Promise.resolve();

  private constructor() {}

  static async open(api: ApiClient): Promise<SseSubscriber> {
    const sub = new SseSubscriber();
    const envelope = Buffer.from(JSON.stringify(api.envelope({ type: 'SubscribeEvents' }))).toString('base64url');
    const res = await fetch(new URL(`/v1/events?envelope=${envelope}`, api.apiUrl), { signal: sub.abort.signal });
    if (res.status !== 200 || res.body === null)
      throw new Error(`event stream answered ${res.status}: ${await res.text()}`);
    let onConnected: (ok: boolean) => void = () => undefined;
    const connected = new Promise<boolean>((resolve) => (onConnected = resolve));
    sub.reading = (async () => {
      const decoder = new TextDecoder();
      let pending = '';
      try {
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
          const text = decoder.decode(chunk, { stream: true });
          sub.raw += text;
          pending += text;
          let end: number;
          while ((end = pending.indexOf('\n\n')) >= 0) {
            sub.parse(pending.slice(0, end));
            pending = pending.slice(end + 2);
          }
          if (sub.raw.includes(': connected')) onConnected(true);
        }
      } catch {
        // aborted by close()
      }
      onConnected(false);
    })();
    // The registry writes `: connected` once its subscriptions are live: nothing published after is missed.
    if (!(await connected)) throw new Error('event stream ended before it was connected');
    return sub;
  }

  private parse(block: string): void {
    let event = 'message';
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line.startsWith('event: ')) event = line.slice(7);
      else if (line.startsWith('data: ')) data.push(line.slice(6));
    }
    if (data.length > 0) this.events.push({ event, data: JSON.parse(data.join('\n')) });
  }

  /** The first event named `event` whose data satisfies `match` (bounded wait). */
  waitFor(event: string, match: (data: any) => boolean = () => true, timeoutMs = 10_000): Promise<SseEvent> {
    return eventually(
      async () => this.events.find((e) => e.event === event && match(e.data)),
      timeoutMs,
      `${event} on the event stream`,
    );
  }

  async close(): Promise<void> {
    this.abort.abort();
    await this.reading;
  }
}
