import { httpsGet } from '../servers/tls-front.js';

/** What the browser keeps of an answer. */
export interface BrowserResponse {
  status: number;
  location: string | null;
  setCookie: string[];
  text: string;
}

/**
 * A browser as far as OAuth needs one: it follows redirects itself and keeps cookies per origin
 * and path (what the registry's binding cookie needs), so a test can open an authorization
 * ticket, sign in at the test authorization server and come back to the callback the way a real
 * browser does, or carry a URL to another browser (another instance) to replay it there.
 */
export class TestBrowser {
  /** origin → cookie name → {value, path}. */
  private readonly jar = new Map<string, Map<string, { value: string; path: string }>>();

  /** `ca`: a CA the browser trusts for https origins (a test's TLS front). */
  constructor(private readonly opts: { ca?: string } = {}) {}

  /** How many cookies the browser holds for `origin` (the registry's, after a callback: none). */
  cookieCount(origin: string): number {
    return this.jar.get(origin)?.size ?? 0;
  }

  /** One GET with this browser's cookies; stores what the answer sets. No redirect followed. */
  async request(url: string | URL): Promise<BrowserResponse> {
    const target = new URL(url);
    const cookies = [...(this.jar.get(target.origin)?.entries() ?? [])]
      .filter(([, c]) => target.pathname.startsWith(c.path))
      .map(([n, c]) => `${n}=${c.value}`);
    const headers: Record<string, string> = cookies.length > 0 ? { cookie: cookies.join('; ') } : {};
    let res: BrowserResponse;
    if (target.protocol === 'https:') {
      const got = await httpsGet(target.href, { headers, ...(this.opts.ca !== undefined ? { ca: this.opts.ca } : {}) });
      const raw = got.headers['set-cookie'] ?? [];
      const setCookie = Array.isArray(raw) ? raw : [raw];
      const location = got.headers.location;
      res = { status: got.status, location: typeof location === 'string' ? location : null, setCookie, text: got.text };
    } else {
      const got = await fetch(target, { redirect: 'manual', headers });
      res = {
        status: got.status,
        location: got.headers.get('location'),
        setCookie: got.headers.getSetCookie(),
        text: await got.text(),
      };
    }
    for (const line of res.setCookie) this.store(target, line);
    return res;
  }

  /**
   * Opens a ticket URL the registry handed out: the browser gets its binding cookie and the
   * authorization server's URL it was redirected to (returned, not followed).
   */
  async start(ticketUrl: string): Promise<URL> {
    const res = await this.request(ticketUrl);
    const location = res.location;
    if (res.status !== 302 || location === null)
      throw new Error(`the ticket did not redirect (${res.status}): ${res.text.slice(0, 300)}`);
    return new URL(location, ticketUrl);
  }

  /**
   * The authorization server's answer for an authorization URL (the test server approves at once):
   * the callback URL it redirects to, not followed.
   */
  async authorizationResponse(authorizationUrl: string | URL): Promise<URL> {
    const res = await this.request(authorizationUrl);
    const location = res.location;
    if (location === null) throw new Error(`the authorization server answered ${res.status} without a redirect`);
    return new URL(location, authorizationUrl);
  }

  /** Opens `url` and follows redirects (at most 10) with this browser's cookies: the last page. */
  async open(url: string | URL): Promise<{ status: number; text: string; url: URL }> {
    let current = new URL(url);
    for (let hops = 0; hops < 10; hops++) {
      const res = await this.request(current);
      const location = res.location;
      if (res.status >= 300 && res.status < 400 && location !== null) {
        current = new URL(location, current);
        continue;
      }
      return { status: res.status, text: res.text, url: current };
    }
    throw new Error('too many redirects');
  }

  private store(url: URL, line: string): void {
    const [pair = '', ...attrs] = line.split(';');
    const eq = pair.indexOf('=');
    if (eq < 0) return;
    const name = pair.slice(0, eq).trim();
    const value = pair.slice(eq + 1).trim();
    let path = '/';
    let remove = value === '';
    for (const attr of attrs) {
      const [k = '', v = ''] = attr.split('=').map((x) => x.trim());
      if (k.toLowerCase() === 'path') path = v;
      if (k.toLowerCase() === 'max-age' && Number(v) <= 0) remove = true;
    }
    const cookies = this.jar.get(url.origin) ?? new Map<string, { value: string; path: string }>();
    if (remove) cookies.delete(name);
    else cookies.set(name, { value, path });
    this.jar.set(url.origin, cookies);
  }
}

/** Opens a ticket URL in a fresh browser and follows it to the end: the page a browser would show. */
export function authorizeInNewBrowser(ticketUrl: string): Promise<{ status: number; text: string; url: URL }> {
  return new TestBrowser().open(ticketUrl);
}
