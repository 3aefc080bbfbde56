/**
 * The quotas when Redis stops answering, as an attack on the running registry: a client whose
 * address holds its event streams makes Redis slow (a flood of its own, a stalled network) so that
 * the limits' commands time out, hoping they then admit. A Redis of the machine behind a relay
 * that goes silent (it reads every command and forwards none): a stream, an action, and a garbage
 * envelope that needs no Redis of its own are all refused at the first limit, `unavailable`
 * (HTTP 503, dependency `redis`, retryable, `Retry-After`), never let past it uncounted (before,
 * the limits admitted on a timeout and the garbage envelope reached the parser: `invalid_input`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUTHORIZE_PATH, TOKEN_PATH } from '@mcpx/contracts';
import { setupTelemetry, type Telemetry } from '@mcpx/telemetry';
import { ApiClient } from '../support/api-client.js';
import { serviceUrls } from '../support/env.js';
import { openEventStream, type OpenedEventStream } from '../support/fixtures/event-streams.js';
import { RegistryHarness } from '../support/registry-harness.js';
import { InProcessSystem } from '../support/system.js';
import { startFaultyFront, type FaultyFront } from '../ops/support/faulty-front.js';

const PER_ADDRESS = 2;
const ATTACKER = '198.51.100.60';

function expectRedisUnavailable(answer: { status: number; body: any; retryAfter: string | null }): void {
  expect(answer.status, JSON.stringify(answer.body)).toBe(503);
  expect(answer.body.error).toMatchObject({ code: 'unavailable', details: { dependency: 'redis' } });
  expect(answer.body.error.details.retryAfterMs).toBeGreaterThan(0);
  expect(Number(answer.retryAfter)).toBeGreaterThanOrEqual(1);
  expect(JSON.stringify(answer.body)).not.toMatch(/redis:\/\/|timed out|Command/);
}

describe('quotas against a Redis that stops answering: refused, never admitted uncounted', () => {
  let front: FaultyFront;
  let h: RegistryHarness;
  const open: OpenedEventStream[] = [];

  beforeAll(async () => {
    const redis = new URL(serviceUrls().redis);
    front = await startFaultyFront({ host: redis.hostname, port: Number(redis.port || 6379) });
    h = await RegistryHarness.start({
      env: {
        REDIS_URL: `redis://127.0.0.1:${front.port}`,
        TRUSTED_PROXIES: '127.0.0.0/8, ::1',
        QUOTA_EVENT_STREAMS_PER_ADDRESS: String(PER_ADDRESS),
      },
      projector: false,
    });
  });
  afterAll(async () => {
    for (const s of open) s.close();
    if (front !== undefined) front.mode = 'pass';
    front?.cut();
    await h?.stop();
    await front?.close();
  });

  it('an address at its streams, then Redis silent: every request from it is unavailable at the first limit', async () => {
    const headers = { 'x-forwarded-for': ATTACKER };
    for (let i = 0; i < PER_ADDRESS; i++) {
      const s = await openEventStream(h.apiUrl, new ApiClient(h.apiUrl), headers);
      open.push(s);
      expect(s.status).toBe(200);
    }
    front.mode = 'blackhole';
    try {
      const stream = await openEventStream(h.apiUrl, new ApiClient(h.apiUrl), headers);
      open.push(stream);
      expectRedisUnavailable(stream);
      // A garbage envelope needs no Redis of its own: only the limits stand before its parser.
      const garbage = await fetch(new URL('/v1/events?envelope=xx', h.apiUrl), { headers });
      expectRedisUnavailable({
        status: garbage.status,
        body: await garbage.json(),
        retryAfter: garbage.headers.get('retry-after'),
      });
      // An action from another address: its address's rate limit cannot count, so it is refused too.
      const action = await fetch(new URL('/v1/actions', h.apiUrl), {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-forwarded-for': '198.51.100.61' },
        body: '{"not":"an envelope"}',
      });
      expectRedisUnavailable({
        status: action.status,
        body: await action.json(),
        retryAfter: action.headers.get('retry-after'),
      });
    } finally {
      front.mode = 'pass';
      front.cut();
    }
  });
});

/**
 * The authorization server's per-address limits on sign-ins and token requests, the same way: a
 * request whose limit Redis cannot count is refused 503 with Retry-After (before, it was let
 * through uncounted after the command's timeout: a token guess answered `invalid_grant`).
 */
describe('sign-in and token limits against a Redis that stops answering', () => {
  let front: FaultyFront;
  let telemetry: Telemetry;
  let system: InProcessSystem;

  beforeAll(async () => {
    const redis = new URL(serviceUrls().redis);
    front = await startFaultyFront({ host: redis.hostname, port: Number(redis.port || 6379) });
    telemetry = await setupTelemetry({ serviceName: 'mcpx-quotas-redis-stalled' });
    system = await InProcessSystem.start({
      telemetry,
      logSink: () => {},
      authorizationServer: true,
      env: { REDIS_URL: `redis://127.0.0.1:${front.port}` },
    });
  });
  afterAll(async () => {
    if (front !== undefined) front.mode = 'pass';
    front?.cut();
    await system?.stop();
    await telemetry?.shutdown();
    await front?.close();
  });

  it('a token request and a sign-in are refused 503 with Retry-After, not let through uncounted', async () => {
    front.mode = 'blackhole';
    try {
      const token = await fetch(`${system.authUrl}${TOKEN_PATH}`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'grant_type=authorization_code&code=guess&code_verifier=x&client_id=c&redirect_uri=http://127.0.0.1:9/cb',
      });
      expect(token.status).toBe(503);
      expect(await token.json()).toMatchObject({ error: 'temporarily_unavailable' });
      expect(Number(token.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      const signIn = await fetch(`${system.authUrl}${AUTHORIZE_PATH}?response_type=code`, { redirect: 'manual' });
      expect(signIn.status).toBe(503);
      expect(Number(signIn.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      await signIn.arrayBuffer();
    } finally {
      front.mode = 'pass';
      front.cut();
    }
  });
});
