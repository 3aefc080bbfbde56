/**
 * Attack: an OAuth authorization completed by a browser other than the one of the person who
 * started it. Whoever got hold of an authorization link (a
 * ticket, the authorization server's URL behind it, or the callback URL with its code and state)
 * tries to complete the owner's authorization, or to spoil it, from another browser. A signed
 * action hands an OWNER or WRITER a single-use ticket URL; opening it sets an HttpOnly,
 * SameSite=Lax cookie on the registry's OAuth path and redirects to the authorization server; the
 * callback completes only with that cookie. Each refusal exchanges no code, stores no token and
 * leaves the owner's own browser able to finish.
 */
import { createHash } from 'node:crypto';
import type { NatsConnection } from '@nats-io/transport-node';
import { Redis } from 'ioredis';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RedactedMcpServer } from '@mcpx/contracts';
import type { TestMcpServer, TestOAuthServer } from '../servers/index.js';
import { ApiClient } from '../support/api-client.js';
import { serviceUrls } from '../support/env.js';
import { recordWire } from '../support/leak-recorders.js';
import { TestBrowser } from '../support/oauth-browser.js';
import type { OAuthSystem } from '../support/oauth-system.js';
import { eventually, type InProcessSystem } from '../support/system.js';
import { natsPerSuite, oauthSystemPerSuite } from '../support/fixtures/suites.js';
import { metricsText } from '../support/metrics-text.js';

describe('OAuth is bound to the browser that opened the ticket', () => {
  const exporter = new InMemorySpanExporter();
  const logLines: string[] = [];
  const natsPayloads: string[] = [];
  let oauth: OAuthSystem;
  let system: InProcessSystem;
  let as: TestOAuthServer;
  let upstream: TestMcpServer;
  let api: ApiClient;
  let redis: Redis;
  let nc: NatsConnection;
  const tickets: string[] = [];

  oauthSystemPerSuite(
    {
      serviceName: 'mcpx-oauth-binding',
      spanExporter: exporter,
      logSink: (line) => logLines.push(line),
      env: { LOG_LEVEL: 'debug' },
    },
    (o) => ({ oauth, system, as, upstream } = o),
  );
  natsPerSuite((c) => (nc = c));

  beforeAll(async () => {
    api = new ApiClient(system.apiUrl);
    redis = new Redis(serviceUrls().redis);
    recordWire(nc, system.env.NATS_PREFIX ?? '', natsPayloads);
  });

  afterAll(async () => {
    redis?.disconnect();
  });

  /** A new oauth server of the account, waiting for authorization: its ticket URL. */
  async function waiting(name: string): Promise<string> {
    const set = await api.act<{ server: RedactedMcpServer; authorizationUrl: string }>('SetMcpServer', {
      name,
      config: { url: upstream.url, auth: 'oauth' },
    });
    expect(set.server.status.state).toBe('auth_required');
    tickets.push(new URL(set.authorizationUrl).searchParams.get('ticket') ?? '');
    return set.authorizationUrl;
  }

  async function stateOf(name: string): Promise<string | undefined> {
    const { servers } = await api.act<{ servers: RedactedMcpServer[] }>('ListMcpServers');
    return servers.find((s) => s.name === name)?.status.state;
  }

  async function tokensStored(name: string): Promise<boolean> {
    const { servers } = await api.act<{ servers: RedactedMcpServer[] }>('ListMcpServers');
    const id = servers.find((s) => s.name === name)?.id ?? '';
    const client = new pg.Client({ connectionString: system.db.url });
    await client.connect();
    try {
      const { rows } = await client.query<{ n: string }>(
        'SELECT count(*)::text AS n FROM registry.oauth_connections WHERE server_id = $1 AND tokens_sealed IS NOT NULL',
        [id],
      );
      return rows[0]?.n !== '0';
    } finally {
      await client.end();
    }
  }

  it('the ticket sets an HttpOnly, SameSite=Lax cookie on the OAuth path only, and redirects to the authorization server', async () => {
    const ticket = await waiting('cookie-shape');
    const res = await fetch(ticket, { redirect: 'manual' });
    await res.body?.cancel();
    expect(res.status).toBe(302);
    expect(new URL(res.headers.get('location') ?? '').origin + '/').toBe(as.issuer);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    const cookies = res.headers.getSetCookie();
    expect(cookies).toHaveLength(1);
    const attrs = cookies[0]!.split(';').map((a) => a.trim());
    expect(attrs[0]).toMatch(/^mcpx_oauth_[0-9a-f]{16}=[A-Za-z0-9_-]{43}$/);
    expect(attrs).toContain('HttpOnly');
    expect(attrs).toContain('SameSite=Lax');
    expect(attrs).toContain('Path=/v1/oauth');
    const maxAge = Number(attrs.find((a) => a.startsWith('Max-Age='))?.slice('Max-Age='.length));
    expect(maxAge).toBeGreaterThan(0);
    expect(maxAge).toBeLessThanOrEqual(15 * 60);
    // The registry listens on http here: a Secure cookie would never come back.
    expect(attrs).not.toContain('Secure');
  });

  it('a callback replayed from another browser (no cookie) is refused: no code exchanged, nothing stored, the owner still completes', async () => {
    const owner = new TestBrowser();
    const callback = await owner.authorizationResponse(await owner.start(await waiting('replayed')));
    expect(callback.pathname).toBe('/v1/oauth/callback');
    const exchanges = as.stats.codeExchanges;

    const attacker = new TestBrowser();
    const refused = await attacker.open(callback);
    expect(refused.status).toBe(400);
    expect(refused.text).toContain('Authorization not started in this browser');
    // A cookie of the right name with a value of the attacker's own is no better.
    const forgedCookie = await fetch(callback, {
      headers: {
        cookie: `mcpx_oauth_${createHash('sha256')
          .update(callback.searchParams.get('state') ?? '')
          .digest('hex')
          .slice(0, 16)}=${'A'.repeat(43)}`,
      },
    });
    expect(forgedCookie.status).toBe(400);
    expect(await forgedCookie.text()).toContain('Authorization not started in this browser');
    expect(as.stats.codeExchanges).toBe(exchanges);
    expect(await stateOf('replayed')).toBe('auth_required');
    expect(await tokensStored('replayed')).toBe(false);

    // Nothing was consumed: the owner's browser finishes its authorization.
    const done = await owner.open(callback);
    expect(done.status).toBe(200);
    expect(done.text).toContain('Connected to replayed');
    expect(as.stats.codeExchanges).toBe(exchanges + 1);
    expect(await stateOf('replayed')).toBe('ok');
  });

  it("the authorization server's URL carried to another browser completes nothing there", async () => {
    const owner = new TestBrowser();
    const asUrl = await owner.start(await waiting('carried'));
    const exchanges = as.stats.codeExchanges;
    // The attacker signs in at the authorization server (as themselves) and comes back: refused.
    const attacker = await new TestBrowser().open(asUrl);
    expect(attacker.status).toBe(400);
    expect(attacker.url.pathname).toBe('/v1/oauth/callback');
    expect(attacker.text).toContain('Authorization not started in this browser');
    expect(as.stats.codeExchanges).toBe(exchanges);
    expect(await tokensStored('carried')).toBe(false);
    // The owner's browser still completes the (same, still pending) authorization.
    expect((await owner.open(asUrl)).text).toContain('Connected to carried');
  });

  it("a forged error response without the cookie does not end the owner's authorization", async () => {
    const owner = new TestBrowser();
    const asUrl = await owner.start(await waiting('spoiled'));
    const state = asUrl.searchParams.get('state') ?? '';
    const forged = new URL(`${system.apiUrl}/v1/oauth/callback`);
    for (const [k, v] of Object.entries({ error: 'access_denied', state, iss: as.issuer }))
      forged.searchParams.set(k, v);
    const refused = await new TestBrowser().open(forged);
    expect(refused.status).toBe(400);
    expect(refused.text).toContain('Authorization not started in this browser');
    expect(refused.text).not.toContain('access_denied');
    expect((await owner.open(asUrl)).text).toContain('Connected to spoiled');
  });

  it('a ticket opens once: the second opening (the same browser or another) is refused and sets no cookie', async () => {
    const ticket = await waiting('twice');
    const first = new TestBrowser();
    const asUrl = await first.start(ticket);
    for (const browser of [first, new TestBrowser()]) {
      const again = await browser.request(ticket);
      expect(again.status).toBe(400);
      expect(again.location).toBeNull();
      expect(again.setCookie).toEqual([]);
      expect(again.text).toContain('already used, has expired');
    }
    // Two browsers racing one ticket: exactly one is let through.
    const raced = await waiting('raced-ticket');
    const answers = await Promise.all([
      new TestBrowser().request(raced),
      new TestBrowser().request(raced),
      new TestBrowser().request(raced),
    ]);
    expect(answers.map((a) => a.status).sort()).toEqual([302, 400, 400]);
    // The first opener is unaffected.
    expect((await first.open(asUrl)).text).toContain('Connected to twice');
  });

  it('an expired ticket is refused', async () => {
    const ticket = await waiting('expired');
    const value = new URL(ticket).searchParams.get('ticket') ?? '';
    // Its life runs out (ten minutes, cut short here through its Redis TTL).
    const key = `${system.env.REDIS_PREFIX}oauth-ticket:${createHash('sha256').update(value).digest('hex')}`;
    expect(await redis.pexpire(key, 1)).toBe(1);
    await eventually(async () => ((await redis.exists(key)) === 0 ? true : undefined), 5_000, 'the ticket to expire');
    const res = await new TestBrowser().request(ticket);
    expect(res.status).toBe(400);
    expect(res.setCookie).toEqual([]);
    expect(res.text).toContain('already used, has expired');
    expect(await stateOf('expired')).toBe('auth_required');
  });

  it('malformed or unknown tickets are refused without a cookie', async () => {
    for (const query of [
      '',
      '?ticket=',
      `?ticket=${'x'.repeat(500)}`,
      `?ticket=${'B'.repeat(43)}`,
      '?ticket=%00%0d%0a',
    ]) {
      const res = await new TestBrowser().request(`${system.apiUrl}/v1/oauth/start${query}`);
      expect(res.status, query).toBe(400);
      expect(res.setCookie, query).toEqual([]);
    }
    expect((await fetch(`${system.apiUrl}/healthz`)).status).toBe(200);
  });

  it('a ticket, a binding cookie or a state never appears in a log line, a NATS message or a span; each step is counted and traced', async () => {
    const browser = new TestBrowser();
    const ticket = await waiting('quiet');
    const asUrl = await browser.start(ticket);
    expect((await browser.open(asUrl)).text).toContain('Connected to quiet');
    const state = asUrl.searchParams.get('state') ?? '';
    expect(tickets.length).toBeGreaterThan(3);
    const spanText = JSON.stringify(
      exporter.getFinishedSpans().map((s) => ({ n: s.name, a: s.attributes, e: s.events })),
    );
    expect(
      exporter
        .getFinishedSpans()
        .some((s) => s.name === 'registry.oauth start' && s.attributes['mcpx.oauth.outcome'] === 'redirected'),
    ).toBe(true);
    expect(
      exporter
        .getFinishedSpans()
        .some((s) => s.name === 'registry.oauth start' && s.attributes['mcpx.oauth.outcome'] === 'unknown'),
    ).toBe(true);
    for (const [where, text] of [
      ['logs', logLines.join('\n')],
      ['nats', natsPayloads.join('\n')],
      ['spans', spanText],
    ] as const) {
      for (const t of [...tickets, state]) expect(text.includes(t), `${where} holds a ticket or state`).toBe(false);
    }
    expect(
      logLines.some((l) => l.includes('oauth callback refused: not the browser that opened the authorization')),
    ).toBe(true);
    const counted = (await metricsText(oauth.telemetry))
      .split('\n')
      .filter((l) => l.startsWith('mcpx_oauth_browser_bindings_total{'));
    for (const [step, outcome] of [
      ['ticket', 'issued'],
      ['start', 'redirected'],
      ['start', 'unknown'],
      ['start', 'malformed'],
      ['callback', 'bound'],
      ['callback', 'unbound'],
    ]) {
      expect(
        counted.some((l) => l.includes(`step="${step}"`) && l.includes(`outcome="${outcome}"`) && !l.endsWith(' 0')),
        `${step} ${outcome}`,
      ).toBe(true);
    }
  });
});
