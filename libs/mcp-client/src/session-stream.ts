/**
 * Whether a legacy (2025-11-25) Streamable HTTP session can hear its server's unsolicited
 * notifications now. Such a server sends `notifications/tools/list_changed` only on the session's
 * own GET event stream, and drops it when none is open: before the SDK has opened it after
 * `initialize` (it does so in the background), while the SDK reopens a stream that ended, for
 * good once it gave up reopening, or when the server offers no GET stream at all (405). While no
 * stream is open, what the connection listed may have changed unannounced.
 *
 * A GET sent with `Last-Event-ID` resumes a stream the server names by that id (it may be a call's
 * stream, not the session's): it is not counted, so such a session is taken as not listening
 * until a stream is opened afresh.
 */
export class SessionStream {
  #open = 0;

  /** `onChange`: a stream opened or ended (what was listed before may have changed unheard). */
  constructor(private readonly onChange: () => void) {}

  /** Whether a session stream is open now. */
  get open(): boolean {
    return this.#open > 0;
  }

  /** A session stream opened (its response's headers came); returns its end, idempotent. */
  opened(): () => void {
    this.#open++;
    this.onChange();
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.#open--;
      this.onChange();
    };
  }
}

/** Whether a request is the opening of a session stream: a GET for an event stream, not resuming one. */
export function opensSessionStream(init: RequestInit | undefined): boolean {
  if ((init?.method ?? 'GET').toUpperCase() !== 'GET') return false;
  const headers = new Headers(init?.headers);
  return (headers.get('accept') ?? '').includes('text/event-stream') && !headers.has('last-event-id');
}

/** Whether a response is an open event stream. */
export function isEventStream(response: Response): boolean {
  return response.ok && (response.headers.get('content-type') ?? '').toLowerCase().includes('text/event-stream');
}
