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
}
