import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_INBOUND_LIMITS, type InboundLimits } from '@mcpx/config';
import { BodyBudget } from './budget.js';
import { InboundGuard } from './inbound-guard.js';
import { RefusalLog } from './refusal-log.js';

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

/** A server that echoes the length of each body it read through the guard. */
async function guarded(
  limits: Partial<InboundLimits>,
): Promise<{ port: number; guard: InboundGuard; lines: Array<Record<string, unknown>> }> {
  const lines: Array<Record<string, unknown>> = [];
  const guard = new InboundGuard({
    limits: { ...DEFAULT_INBOUND_LIMITS, ...limits },
    answer: (_req, res, r) =>
      res
        .writeHead(r.status, { 'content-type': 'application/json' })
        .end(JSON.stringify({ reason: r.reason, bound: r.bound })),
    log: { warn: (msg, fields) => lines.push({ msg, ...fields }) },
  });
  const server = createServer(InboundGuard.serverOptions, (req, res) => {
    if (!guard.admit(req, res)) return;
    if (req.url === '/refuse') return void res.writeHead(401).end('no');
    void guard.read(req, res, 1024 * 1024).then((body) => {
      if (body !== undefined)
        res.writeHead(200, { 'content-length': String(body.length).length }).end(String(body.length));
    });
  });
  guard.attach(server);
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { port: (server.address() as AddressInfo).port, guard, lines };
}

/** A raw client: what it received, and when its socket closed. */
function client(
  port: number,
  head: string,
  body = '',
): { socket: Socket; received: () => string; closed: Promise<void> } {
  const socket = connect(port, '127.0.0.1');
  let text = '';
  socket.on('data', (d: Buffer) => (text += d.toString('latin1')));
  socket.on('error', () => undefined);
  socket.write(head + body);
  return { socket, received: () => text, closed: new Promise((r) => socket.once('close', () => r())) };
}

const post = (path: string, length: number): string =>
  `POST ${path} HTTP/1.1\r\nhost: x\r\ncontent-length: ${length}\r\n\r\n`;

describe('the inbound guard', () => {
  it('reads a body within its bounds and gives the budget back', async () => {
    const { port, guard } = await guarded({});
    const c = client(port, post('/', 5), 'hello');
    await expect.poll(c.received).toContain('\r\n\r\n5');
    expect(guard.budget.buffered).toBe(0);
    c.socket.destroy();
  });

  it('cuts a stalled body at its deadline with 408 and closes the socket', async () => {
    const { port, guard, lines } = await guarded({ bodyTimeoutMs: 300 });
    const c = client(port, post('/', 1000), 'x'.repeat(100));
    await expect.poll(() => guard.budget.buffered).toBe(100);
    await c.closed;
    expect(c.received()).toMatch(/^HTTP\/1\.1 408 .*connection: close.*"reason":"deadline"/is);
    expect(guard.budget.buffered).toBe(0);
    expect(lines[0]).toMatchObject({ msg: 'inbound requests refused', refused: { deadline: 1 } });
  });

  it('closes a socket whose headers stall past the headers deadline', async () => {
    const { port } = await guarded({ headersTimeoutMs: 500 });
    const c = client(port, 'POST / HTTP/1.1\r\nhost: x\r\n');
    await c.closed;
    expect(c.received()).toMatch(/^(HTTP\/1\.1 408 |$)/);
  });

  it("refuses a body past the budget (here: the address's quarter of it) with 503 and Retry-After", async () => {
    const { port, guard } = await guarded({ bodyBudgetBytes: 256 * 1024, bodyTimeoutMs: 5_000 });
    const holder = client(port, post('/', 200_000), 'x'.repeat(60 * 1024));
    await expect.poll(() => guard.budget.buffered).toBeGreaterThan(32 * 1024);
    const over = client(port, post('/', 200_000), 'y'.repeat(20 * 1024));
    await over.closed;
    expect(over.received()).toMatch(/^HTTP\/1\.1 503 .*retry-after: 2.*"reason":"budget"/is);
    expect(guard.budget.buffered).toBeLessThanOrEqual(64 * 1024);
    // A request without a body still goes through.
    const plain = client(port, 'GET /refuse HTTP/1.1\r\nhost: x\r\n\r\n');
    await expect.poll(plain.received).toContain('401');
    plain.socket.destroy();
    holder.socket.destroy();
    await expect.poll(() => guard.budget.buffered).toBe(0);
  });

  it('refuses a declared length over the route bound unread (413), and answers a refusal without reading', async () => {
    const { port } = await guarded({});
    const big = client(port, post('/', 2 * 1024 * 1024));
    await big.closed;
    expect(big.received()).toMatch(/^HTTP\/1\.1 413 .*"too_large"/is);
    const refused = client(port, post('/refuse', 4 * 1024 * 1024));
    await refused.closed;
    expect(refused.received()).toMatch(/^HTTP\/1\.1 401/);
  });

  it('caps open sockets per peer address, and frees a slot when one closes', async () => {
    const { port } = await guarded({ connectionsPerAddress: 2 });
    const a = client(port, '');
    const b = client(port, '');
    await new Promise((r) => setTimeout(r, 50));
    const c = client(port, '');
    await c.closed;
    expect(c.received()).toMatch(/^HTTP\/1\.1 503 .*too many open connections/s);
    // A whole answer: its declared length is its body's.
    const [head, body] = c.received().split('\r\n\r\n');
    expect(Number(/content-length: (\d+)/.exec(head!)?.[1])).toBe(Buffer.byteLength(body!));
    expect(JSON.parse(body!)).toMatchObject({ error: { code: 'unavailable' } });
    a.socket.destroy();
    await a.closed;
    await new Promise((r) => setTimeout(r, 50));
    const d = client(port, 'GET /refuse HTTP/1.1\r\nhost: x\r\n\r\n');
    await expect.poll(d.received).toMatch(/^HTTP\/1\.1 401/);
    b.socket.destroy();
    d.socket.destroy();
  });
});

describe('the body budget', () => {
  it('takes up to its limit and no byte more', () => {
    const b = new BodyBudget(10);
    expect(b.take(6)).toBe(true);
    expect(b.take(5)).toBe(false);
    expect(b.take(4)).toBe(true);
    expect(b.full()).toBe(true);
    b.give(10);
    expect(b.buffered).toBe(0);
  });

  it('holds one address to its share, and takes without an address against the whole only', () => {
    const b = new BodyBudget(100, 25);
    expect(b.take(25, 'a')).toBe(true);
    expect(b.take(1, 'a')).toBe(false);
    expect(b.full('a')).toBe(true);
    expect(b.take(25, 'b')).toBe(true);
    expect(b.take(50)).toBe(true);
    expect(b.full()).toBe(true);
    b.give(25, 'a');
    expect(b.full('a')).toBe(false);
    expect(b.buffered).toBe(75);
  });
});

describe('the refusal log', () => {
  it('says the first refusal at once and the rest as one count per window', () => {
    const lines: unknown[] = [];
    const log = new RefusalLog({ warn: (msg, fields) => lines.push({ msg, ...fields }) });
    for (let i = 0; i < 500; i++) log.add('deadline');
    expect(lines).toHaveLength(1);
  });
});
