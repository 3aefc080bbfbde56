import { WireError, type ActionEnvelope } from '@mcpx/contracts';
import { generateKeyPair, signAction, type KeyPair } from '@mcpx/envelope';

/** A test account: a fresh key, and signed actions against a registry's API. */
export class ApiClient {
  readonly key: KeyPair;

  constructor(
    readonly apiUrl: string,
    key?: KeyPair,
    readonly account?: string,
  ) {
    this.key = key ?? generateKeyPair();
  }

  get principal(): string {
    return this.account ?? this.key.principal;
  }

  envelope(action: { type: string } & Record<string, unknown>, now?: number): ActionEnvelope {
    return signAction(this.key, this.principal, action, now);
  }

  /** Sends any body; returns status and parsed body (for bad-input tests). */
  async raw(body: unknown, contentType = 'application/json'): Promise<{ status: number; body: any }> {
    const res = await fetch(new URL('/v1/actions', this.apiUrl), {
      method: 'POST',
      headers: { 'content-type': contentType },
      body: typeof body === 'string' || body instanceof Uint8Array ? body : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // keep text
    }
    return { status: res.status, body: parsed };
  }

  /** Signs and sends an action; throws the typed error on failure. */
  async act<T = any>(type: string, fields: Record<string, unknown> = {}): Promise<T> {
    const { status, body } = await this.raw(this.envelope({ type, ...fields }));
    if (status !== 200) throw WireError.from(body?.error);
    return body as T;
  }

  /**
   * {@link act} for a test's set-up, which is not what it tests: a refusal that ran nothing and
   * says when to come back (`unavailable`: a dependency did not answer in time, as on a loaded
   * box; `rate_limited`) is sent again after its hint, a few times, as a client does. A new
   * envelope each time (a fresh nonce). Any other error, or the fourth refusal, is thrown.
   */
  async actForSetUp<T = any>(type: string, fields: Record<string, unknown> = {}): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.act<T>(type, fields);
      } catch (err) {
        const wait = err instanceof WireError ? err.details.retryAfterMs : undefined;
        if (!(err instanceof WireError) || !err.retryable || typeof wait !== 'number' || attempt >= 4) throw err;
        await new Promise((r) => setTimeout(r, Math.min(wait, 5_000)));
      }
    }
  }
}
