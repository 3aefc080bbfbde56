import { InMemorySpanExporter } from '@opentelemetry/sdk-trace';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setupTelemetry, type Telemetry } from '@mcpx/telemetry';
import { InProcessSystem, eventually } from '../support/system.js';

/**
 * The agent endpoint's authorization server run by `InProcessSystem` (`authorizationServer: true`):
 * on its own origin, its issuer the registry was told about, its steps' spans and its log lines in
 * this process's telemetry and sink, its database reached as its own role. The whole sign-in flow
 * is test/endpoint/endpoint-oauth.test.ts's, with the services as processes.
 */
describe('InProcessSystem with the authorization server', () => {
  const exporter = new InMemorySpanExporter();
  const lines: string[] = [];
  let telemetry: Telemetry;
  let system: InProcessSystem;

  beforeAll(async () => {
    telemetry = await setupTelemetry({ serviceName: 'mcpx-as-in-process', spanExporter: exporter });
    system = await InProcessSystem.start({ telemetry, logSink: (line) => lines.push(line), authorizationServer: true });
  }, 60_000);

  afterAll(async () => {
    await system?.stop();
    await telemetry?.shutdown();
  });

  /** The outcome its span recorded for the last step `step`. */
  const outcomeOf = (step: string): Promise<unknown> =>
    eventually(async () => {
      const spans = exporter.getFinishedSpans().filter((s) => s.name === `authorization-server ${step}`);
      return spans.at(-1)?.attributes['mcpx.oauth_server.outcome'];
    });

  it('serves its metadata on its own origin, the issuer being that origin', async () => {
    expect(system.authUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(system.authUrl).not.toBe(system.apiUrl);
    const res = await fetch(`${system.authUrl}/.well-known/oauth-authorization-server`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({
      issuer: system.authUrl,
      authorization_endpoint: `${system.authUrl}/v1/oauth-server/authorize`,
      token_endpoint: `${system.authUrl}/v1/oauth-server/token`,
    });
    // Its log lines reach the system's sink: it said it was ready, with its issuer.
    const ready = lines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.msg === 'authorization server ready');
    expect(ready).toMatchObject({ issuer: system.authUrl });
  });

  it('answers an authorization request without a client with a page, its span saying why', async () => {
    const res = await fetch(`${system.authUrl}/v1/oauth-server/authorize?response_type=code`, { redirect: 'manual' });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toMatch(/text\/html/);
    await res.arrayBuffer();
    expect(await outcomeOf('authorize')).toBe('invalid_client');
  });

  it('refuses an unknown refresh token after looking for it in the database as its own role', async () => {
    const res = await fetch(`${system.authUrl}/v1/oauth-server/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'refresh_token',
        refresh_token: 'mcpx_rt_unknown',
        client_id: 'https://client.example/doc.json',
      }),
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: 'invalid_grant' });
    expect(String(await outcomeOf('token'))).toMatch(/^invalid_grant_/);
    // An unsupported grant is told apart from it.
    const bad = await fetch(`${system.authUrl}/v1/oauth-server/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'password', client_id: 'https://client.example/doc.json' }),
    });
    expect(await bad.json()).toMatchObject({ error: 'unsupported_grant_type' });
  });
});
