import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { OutboundRefusedError } from './errors.js';
import { createOutboundFetch } from './outbound-fetch.js';
import type { OutboundFetch, OutboundLookup, ResolvedAddress } from './outbound-fetch.js';
import type { OutboundPolicy } from './policy.js';

interface Seen {
  method: string;
  path: string;
  host: string;
  /** The address the client's socket reached. */
  localAddress: string;
}

interface TestServer {
  port: number;
  origin: string;
  seen: Seen[];
  /** TCP connections accepted so far. */
  connections(): number;
  close(): Promise<void>;
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A real HTTP server on loopback; every test traffic stays on 127.0.0.1. */
async function startServer(handle: (req: IncomingMessage, res: ServerResponse) => void): Promise<TestServer> {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    seen.push({
      method: req.method ?? '',
      path: req.url ?? '',
      host: req.headers.host ?? '',
      localAddress: req.socket.localAddress ?? '',
    });
    handle(req, res);
  });
  let connections = 0;
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const close = async (): Promise<void> => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  cleanups.push(close);
  return { port, origin: `http://127.0.0.1:${port}`, seen, connections: () => connections, close };
}

function outbound(policy: OutboundPolicy, lookup?: OutboundLookup): OutboundFetch {
  const f = createOutboundFetch(policy, lookup === undefined ? {} : { lookup });
  cleanups.push(() => f.close());
  return f;
}

/** A lookup answering from a script, counting its calls; it never touches DNS. */
function scriptedLookup(...answers: ResolvedAddress[][]): OutboundLookup & { calls: string[] } {
  const calls: string[] = [];
  const lookup = async (hostname: string): Promise<ResolvedAddress[]> => {
    calls.push(hostname);
    return answers[Math.min(calls.length, answers.length) - 1] ?? [];
  };
  return Object.assign(lookup, { calls });
}

async function failure(promise: Promise<unknown>): Promise<Error> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(Error);
  return err as Error;
}

async function refusal(promise: Promise<unknown>): Promise<OutboundRefusedError> {
  const err = await failure(promise);
  expect(err).toBeInstanceOf(OutboundRefusedError);
  return err as OutboundRefusedError;
}

const ok = (_req: IncomingMessage, res: ServerResponse): void => {
  res.end('hello');
};
const production: OutboundPolicy = { profile: 'production', allowHttpHosts: [], allowPrivate: [] };
const loopbackAllowed: OutboundPolicy = {
  profile: 'production',
  allowHttpHosts: ['127.0.0.1'],
  allowPrivate: ['127.0.0.1/32'],
};
const v4 = (address: string): ResolvedAddress => ({ address, family: 4 });

describe('createOutboundFetch: addresses', () => {
  it('refuses a loopback server under production, before any request', async () => {
    const server = await startServer(ok);
    const httpOnly = outbound({ ...production, allowHttpHosts: ['127.0.0.1'] });
    const err = await refusal(httpOnly(`${server.origin}/x`));
    expect(err.code).toBe('outbound_refused');
    expect(err.reason).toBe('address');
    expect(err.message).toBe(
      'refused to connect to 127.0.0.1 (loopback address): the operator has not allowed loopback addresses',
    );
    expect((await refusal(outbound(production)(`${server.origin}/x`))).reason).toBe('plain_http');
    expect(server.seen).toHaveLength(0);
  });

  it('reaches a loopback server the operator allowed', async () => {
    const server = await startServer(ok);
    const res = await outbound(loopbackAllowed)(`${server.origin}/x`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('hello');
    expect(server.seen).toEqual([
      { method: 'GET', path: '/x', host: `127.0.0.1:${server.port}`, localAddress: '127.0.0.1' },
    ]);
  });

  it('allows any non-metadata address under the local profile', async () => {
    const server = await startServer(ok);
    const res = await outbound({ profile: 'local', allowHttpHosts: [], allowPrivate: [] })(
      new URL(`${server.origin}/x`),
    );
    expect(await res.text()).toBe('hello');
  });

  it('refuses a hostname that resolves to a private address, without connecting', async () => {
    const lookup = scriptedLookup([v4('10.0.0.1')]);
    const err = await refusal(outbound(production, lookup)('https://internal.example/path?token=s3cret'));
    expect(err.message).toBe(
      'refused to connect to 10.0.0.1 (private address) for internal.example: the operator has not allowed private addresses',
    );
    expect(err.address).toEqual({ ip: '10.0.0.1', kind: 'private' });
    expect(lookup.calls).toEqual(['internal.example']);
  });

  it('refuses when any resolved address is refused', async () => {
    const server = await startServer(ok);
    const lookup = scriptedLookup([v4('127.0.0.1'), v4('10.0.0.1')]);
    const policy = { ...loopbackAllowed, allowHttpHosts: ['mixed.test'] };
    const err = await refusal(outbound(policy, lookup)(`http://mixed.test:${server.port}/`));
    expect(err.address?.ip).toBe('10.0.0.1');
    expect(server.seen).toHaveLength(0);
  });

  it('allows a hostname listed in allowPrivate, keeping it as the Host header', async () => {
    const server = await startServer(ok);
    const lookup = scriptedLookup([v4('127.0.0.1')]);
    const policy: OutboundPolicy = {
      profile: 'production',
      allowHttpHosts: ['svc.internal'],
      allowPrivate: ['svc.internal'],
    };
    const res = await outbound(policy, lookup)(`http://svc.internal:${server.port}/`);
    expect(res.status).toBe(200);
    expect(server.seen[0]?.host).toBe(`svc.internal:${server.port}`);
  });

  it('refuses metadata addresses even under local', async () => {
    const lookup = scriptedLookup([v4('169.254.169.254')]);
    const f = outbound({ profile: 'local', allowHttpHosts: [], allowPrivate: [] }, lookup);
    const err = await refusal(f('http://metadata.google.internal/computeMetadata/v1/'));
    expect(err.address?.kind).toBe('metadata');
    expect((await refusal(f('http://169.254.169.254/latest/meta-data/'))).address?.kind).toBe('metadata');
    expect((await refusal(f('http://[fd00:ec2::254]/latest/'))).address).toEqual({
      ip: 'fd00:ec2::254',
      kind: 'metadata',
    });
  });

  it('checks IP literals without a lookup, in every spelling', async () => {
    const lookup = scriptedLookup();
    const f = outbound(production, lookup);
    for (const url of [
      'https://10.0.0.5/',
      'https://[::1]/',
      'https://[::ffff:10.0.0.1]/',
      'https://0x7f000001/',
      'https://0/',
    ]) {
      expect((await refusal(f(url))).reason, url).toBe('address');
    }
    expect(lookup.calls).toEqual([]);
  });
});

describe('createOutboundFetch: DNS rebinding', () => {
  it('connects to the address it checked and checks again for every new connection', async () => {
    // Connection: close, so every request opens a socket and runs the lookup.
    const server = await startServer((_req, res) => {
      res.setHeader('connection', 'close');
      res.end('hello');
    });
    const lookup = scriptedLookup([v4('127.0.0.1')], [v4('10.0.0.1')]);
    const f = outbound({ ...loopbackAllowed, allowHttpHosts: ['rebind.test'] }, lookup);

    const res = await f(`http://rebind.test:${server.port}/`);
    expect(await res.text()).toBe('hello');
    // One resolution for the connection, and the socket reached that very address.
    expect(lookup.calls).toEqual(['rebind.test']);
    expect(server.seen).toEqual([
      { method: 'GET', path: '/', host: `rebind.test:${server.port}`, localAddress: '127.0.0.1' },
    ]);

    // The name now points elsewhere: the next connection is checked again and refused.
    const err = await refusal(f(`http://rebind.test:${server.port}/`));
    expect(err.address?.ip).toBe('10.0.0.1');
    expect(lookup.calls).toHaveLength(2);
    expect(server.seen).toHaveLength(1);
  });

  it('resolves once per connection, not per request', async () => {
    const server = await startServer(ok);
    const lookup = scriptedLookup([v4('127.0.0.1')]);
    const f = outbound({ ...loopbackAllowed, allowHttpHosts: ['pooled.test'] }, lookup);
    const requests = 6;
    for (let i = 0; i < requests; i++) await (await f(`http://pooled.test:${server.port}/${i}`)).text();
    expect(server.seen).toHaveLength(requests);
    // Keep-alive reuses checked connections; how many the pool opens is undici's business.
    expect(server.connections()).toBeLessThan(requests);
    expect(lookup.calls).toHaveLength(server.connections());
  });
});

describe('createOutboundFetch: redirects', () => {
  async function redirectingServer(other: TestServer): Promise<TestServer> {
    return startServer((req, res) => {
      const go = (status: number, location: string): void => {
        res.writeHead(status, { location }).end();
      };
      if (req.url === '/start') go(302, '/final?step=2');
      else if (req.url === '/away') go(302, `${other.origin}/stolen`);
      else if (req.url?.startsWith('/away-secret')) go(307, `http://127.0.0.1:${other.port}/stolen?token=s3cret`);
      else if (req.url === '/loop') go(302, '/loop');
      else if (req.url === '/post') go(303, '/final');
      else res.end(`${req.method} ${req.url}`);
    });
  }

  it('follows a redirect within the origin', async () => {
    const other = await startServer(ok);
    const server = await redirectingServer(other);
    const res = await outbound(loopbackAllowed)(`${server.origin}/start`);
    expect(await res.text()).toBe('GET /final?step=2');
    expect(server.seen.map((s) => s.path)).toEqual(['/start', '/final?step=2']);
  });

  it('refuses a redirect to another origin without contacting it', async () => {
    const other = await startServer(ok);
    const server = await redirectingServer(other);
    const f = outbound(loopbackAllowed);
    const err = await refusal(f(`${server.origin}/away`));
    expect(err.reason).toBe('redirect');
    expect(err.message).toBe(
      `refused to follow a redirect from ${server.origin} to ${other.origin}: redirects are followed only within the same origin`,
    );
    expect((await refusal(f(`${server.origin}/away-secret?q=1`))).message).not.toMatch(/s3cret|token|q=1|stolen/);
    expect(other.seen).toHaveLength(0);
  });

  it('stops after five redirects', async () => {
    const server = await redirectingServer(await startServer(ok));
    const err = await refusal(outbound(loopbackAllowed)(`${server.origin}/loop`));
    expect(err.reason).toBe('redirect_limit');
    expect(server.seen).toHaveLength(6);
  });

  it('turns a POST into a GET on 303', async () => {
    const server = await redirectingServer(await startServer(ok));
    const res = await outbound(loopbackAllowed)(`${server.origin}/post`, {
      method: 'POST',
      body: '{}',
      headers: { 'content-type': 'application/json' },
    });
    expect(await res.text()).toBe('GET /final');
  });

  it('returns the redirect itself when the caller asks for manual redirects (MCP SDK transports)', async () => {
    const other = await startServer(ok);
    const server = await redirectingServer(other);
    const res = await outbound(loopbackAllowed)(`${server.origin}/away`, { redirect: 'manual' });
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe(`${other.origin}/stolen`);
    expect(other.seen).toHaveLength(0);
  });
});

describe('createOutboundFetch: schemes and messages', () => {
  it('refuses plain http under production unless the host is listed', async () => {
    const lookup = scriptedLookup([v4('93.184.215.14')]);
    const err = await refusal(outbound(production, lookup)('http://api.example/v1?key=s3cret'));
    expect(err.reason).toBe('plain_http');
    expect(err.message).toBe(
      'refused plain http to api.example: use https, or the operator may allow this host in allowHttpHosts',
    );
    expect(lookup.calls).toEqual([]);
  });

  it('refuses schemes other than http and https', async () => {
    const f = outbound({ profile: 'local', allowHttpHosts: [], allowPrivate: [] });
    expect((await refusal(f('file:///etc/passwd'))).reason).toBe('scheme');
    expect((await refusal(f('ftp://files.example/a?b=c'))).message).toBe(
      'refused the ftp: scheme for files.example: only https and http are allowed',
    );
  });

  it('never puts a query string or userinfo in an error message', async () => {
    const f = outbound(production, scriptedLookup([v4('10.0.0.7')]));
    const messages = [
      (await refusal(f('https://internal.example/a/b?token=s3cret#frag'))).message,
      (await refusal(f('http://internal.example/?token=s3cret'))).message,
      (await refusal(f('https://10.0.0.9/?token=s3cret'))).message,
      (await failure(f('https://user:s3cret@internal.example/'))).message,
      (await failure(f('not a url ?token=s3cret'))).message,
    ];
    for (const m of messages) expect(m).not.toMatch(/s3cret|token|frag|user/);
  });
});

describe('createOutboundFetch: streaming', () => {
  it('hands over an SSE stream as it arrives, without buffering', async () => {
    let finish: () => void = () => undefined;
    const server = await startServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: one\n\n');
      finish = () => res.end('data: two\n\n');
    });
    const res = await outbound(loopbackAllowed)(`${server.origin}/sse`, { headers: { accept: 'text/event-stream' } });
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    const first = await reader.read();
    expect(first.value).toBe('data: one\n\n');
    finish();
    let rest = '';
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) rest += chunk.value;
    expect(rest).toBe('data: two\n\n');
  });

  it('accepts a Request and a POST body', async () => {
    const server = await startServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => res.end(`${req.method} ${req.headers['content-type']} ${body}`));
    });
    const f = outbound(loopbackAllowed);
    const viaRequest = await f(
      new Request(`${server.origin}/r`, { method: 'POST', body: 'a=1', headers: { 'content-type': 'text/plain' } }),
    );
    expect(await viaRequest.text()).toBe('POST text/plain a=1');
    const viaInit = await f(`${server.origin}/r`, {
      method: 'POST',
      body: JSON.stringify({ b: 2 }),
      headers: new Headers({ 'content-type': 'application/json' }),
    });
    expect(await viaInit.text()).toBe('POST application/json {"b":2}');
  });
});

describe('createOutboundFetch: request (the call path, no fetch layer)', () => {
  const text = async (body: NodeJS.ReadableStream): Promise<string> => {
    let s = '';
    for await (const chunk of body) s += String(chunk);
    return s;
  };

  it('sends on the same checked pool: refused addresses, rebinding checked per connection', async () => {
    const server = await startServer((req, res) => {
      res.setHeader('connection', 'close');
      res.end(`${req.method} ${req.url} ${req.headers['x-t'] ?? ''}`);
    });
    const lookup = scriptedLookup([v4('127.0.0.1')], [v4('10.0.0.1')]);
    const f = outbound({ ...loopbackAllowed, allowHttpHosts: ['rebind.test'] }, lookup);
    const res = await f.request(new URL(`http://rebind.test:${server.port}/mcp?x=1`), {
      method: 'POST',
      headers: { 'x-t': 'v' },
      body: '{}',
    });
    expect(res.statusCode).toBe(200);
    expect(await text(res.body)).toBe('POST /mcp?x=1 v');
    expect(server.seen[0]).toMatchObject({ host: `rebind.test:${server.port}`, localAddress: '127.0.0.1' });
    const err = await refusal(
      f.request(new URL(`http://rebind.test:${server.port}/mcp`), { method: 'POST', headers: {}, body: '{}' }),
    );
    expect(err.address?.ip).toBe('10.0.0.1');
    expect(server.seen).toHaveLength(1);
    // Policy checks before any connection: a literal address, a scheme.
    expect(
      (await refusal(outbound(production).request(new URL('https://10.0.0.5/'), { method: 'POST', headers: {} })))
        .reason,
    ).toBe('address');
    expect(
      (await refusal(outbound(production).request(new URL(`${server.origin}/`), { method: 'POST', headers: {} })))
        .reason,
    ).toBe('plain_http');
  });

  it('never follows a redirect, and fails like fetch when nothing answers', async () => {
    const other = await startServer(ok);
    const server = await startServer((_req, res) => res.writeHead(307, { location: `${other.origin}/stolen` }).end());
    const f = outbound(loopbackAllowed);
    const res = await f.request(new URL(`${server.origin}/mcp`), { method: 'POST', headers: {}, body: '{}' });
    expect(res.statusCode).toBe(307);
    // undici's destroy() reports an AbortError on the stream: listen for it.
    res.body.on('error', () => {});
    res.body.destroy();
    expect(other.seen).toHaveLength(0);
    const port = server.port;
    await server.close();
    const err = await failure(
      f.request(new URL(`http://127.0.0.1:${port}/mcp`), { method: 'POST', headers: {}, body: '{}' }),
    );
    expect(err).toBeInstanceOf(TypeError);
    expect(err.message).toBe('fetch failed');
    expect((err.cause as { code?: string }).code).toBe('ECONNREFUSED');
  });
});
