/**
 * Filling an account's pending OAuth sign-ins, as an attack on the running authorization server
 * (its own process, open to anyone: each authorize request of a known client becomes a
 * pending sign-in the owner must decide). A flood from one client (metadata document) or from one
 * client address is refused past its own bound, with the limit named, while another client from
 * another address still gets its sign-in to the owner; the database's bound refuses everyone
 * before the table fills, and nothing pending is lost. The services run as processes that trust
 * only the test's TLS front (client ID metadata documents are https) and the loopback balancer,
 * so each test address comes in X-Forwarded-For.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTlsFront, type TlsFront } from '../servers/tls-front.js';
import { ApiClient } from '../support/api-client.js';
import { ProcessSystem } from '../support/system.js';

const PER_CLIENT = 3;
const PER_ADDRESS = 4;
const TOTAL = 12;
const REDIRECT = 'http://127.0.0.1:9/callback';

describe('pending OAuth sign-ins per client, per address and in all', () => {
  let system: ProcessSystem;
  let front: TlsFront;
  let documents: Server;
  let caDir: string;
  const accounts: Array<{ api: ApiClient; agent: string }> = [];

  beforeAll(async () => {
    front = await startTlsFront();
    caDir = await mkdtemp(join(tmpdir(), 'quotas-sign-ins-'));
    await writeFile(join(caDir, 'ca.pem'), front.ca);
    // Any client name has its metadata document: a flood may use as many as it likes.
    documents = createServer((req, res) => {
      const name = /^\/clients\/([a-z0-9-]+)\.json$/.exec(req.url ?? '')?.[1];
      if (name === undefined) return void res.writeHead(404).end();
      const doc = {
        client_id: `${front.origin}/clients/${name}.json`,
        client_name: name,
        redirect_uris: [REDIRECT],
        token_endpoint_auth_method: 'none',
      };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(doc));
    });
    await new Promise<void>((r) => documents.listen(0, '127.0.0.1', r));
    front.target = `http://127.0.0.1:${(documents.address() as AddressInfo).port}`;
    system = await ProcessSystem.start({
      authorizationServer: true,
      projectors: 0,
      proxies: 0,
      env: {
        OUTBOUND_PROFILE: 'production',
        OUTBOUND_ALLOW_HTTP_HOSTS: '127.0.0.1',
        OUTBOUND_ALLOW_PRIVATE: '127.0.0.1/32',
        NODE_EXTRA_CA_CERTS: join(caDir, 'ca.pem'),
        TRUSTED_PROXIES: '127.0.0.0/8, ::1',
        QUOTA_PENDING_SIGN_INS_PER_CLIENT: String(PER_CLIENT),
        QUOTA_PENDING_SIGN_INS_PER_ADDRESS: String(PER_ADDRESS),
        QUOTA_PENDING_SIGN_INS: String(TOTAL),
      },
    });
    for (let i = 0; i < 3; i++) {
      const api = new ApiClient(system.apiUrl);
      const agent = (await api.act('CreateAgent', { name: 'a', definition: { mcpServers: [] } })).agent.id as string;
      accounts.push({ api, agent });
    }
  }, 120_000);

  afterAll(async () => {
    await system?.stop();
    await new Promise((r) => documents?.close(r));
    await front?.close();
    if (caDir) await rm(caDir, { recursive: true, force: true });
  });

  /** An authorization request of `client` for the account's agent from `address`: pending, or the limit that refused it. */
  async function signIn(account: number, client: string, address: string): Promise<string> {
    const { agent } = accounts[account] as { agent: string };
    const u = new URL(`${system.authUrl}/v1/oauth-server/authorize`);
    const challenge = createHash('sha256').update(randomBytes(32).toString('base64url')).digest('base64url');
    const params = {
      response_type: 'code',
      client_id: `${front.origin}/clients/${client}.json`,
      redirect_uri: REDIRECT,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state: 's',
      resource: `http://127.0.0.1:1/v1/agents/${agent}/mcp`,
    };
    for (const [k, v] of Object.entries(params)) u.searchParams.set(k, v);
    const res = await fetch(u, { redirect: 'manual', headers: { 'x-forwarded-for': address } });
    await res.body?.cancel();
    expect(res.status).toBe(302);
    const to = new URL(res.headers.get('location') ?? '');
    if (to.pathname.endsWith('/console/')) return 'pending';
    expect(to.searchParams.get('error')).toBe('temporarily_unavailable');
    return (
      /\((pending_sign_ins\w*)\)/.exec(to.searchParams.get('error_description') ?? '')?.[1] ??
      `unnamed: ${to.searchParams.get('error_description')}`
    );
  }

  const pendingOf = async (account: number): Promise<number> =>
    (await (accounts[account] as { api: ApiClient }).api.act('ListSignInRequests')).signIns.length;

  it('refuses a flood from one client and from one address past their bounds, while another client from another address reaches the owner', async () => {
    const attacker = '198.51.100.40';
    for (let i = 0; i < PER_CLIENT; i++) expect(await signIn(0, 'flood', attacker)).toBe('pending');
    expect(await signIn(0, 'flood', attacker)).toBe('pending_sign_ins_per_client');
    // The same client from a fresh address: still the client's bound in this account.
    expect(await signIn(0, 'flood', '198.51.100.41')).toBe('pending_sign_ins_per_client');
    // Fresh clients from the one address: the address's bound.
    expect(await signIn(0, 'flood-b', attacker)).toBe('pending');
    expect(await signIn(0, 'flood-c', attacker)).toBe('pending_sign_ins_per_address');
    expect(await signIn(1, 'flood-d', attacker)).toBe('pending_sign_ins_per_address');
    // Someone else gets in, to this account and to another.
    expect(await signIn(0, 'honest', '203.0.113.5')).toBe('pending');
    expect(await signIn(1, 'honest', '203.0.113.6')).toBe('pending');
    expect(await pendingOf(0)).toBe(PER_ADDRESS + 1);
  });

  it('refuses everyone once the database holds its pending sign-ins, and loses none of them', async () => {
    let n = (await pendingOf(0)) + (await pendingOf(1)) + (await pendingOf(2));
    for (let i = 0; n < TOTAL; i++) {
      expect(await signIn(2, `fill-${i}`, `192.0.2.${i + 1}`)).toBe('pending');
      n++;
    }
    expect(await signIn(1, 'late', '192.0.2.200')).toBe('pending_sign_ins');
    expect((await pendingOf(0)) + (await pendingOf(1)) + (await pendingOf(2))).toBe(TOTAL);
    // A decision frees a place.
    const first = (await (accounts[2] as { api: ApiClient }).api.act('ListSignInRequests')).signIns[0];
    await (accounts[2] as { api: ApiClient }).api.act('DecideSignIn', { id: first.id, decision: 'deny' });
    expect(await signIn(1, 'late', '192.0.2.200')).toBe('pending');
  });

  it('counts each refusal by its limit', async () => {
    const authServer = system.services.find((s) => s.name === 'authorization-server');
    const text = await (await fetch(`${authServer?.internalUrl}/metrics`)).text();
    for (const limit of ['pending_sign_ins_per_client', 'pending_sign_ins_per_address', 'pending_sign_ins'])
      expect(text).toMatch(new RegExp(`mcpx_oauth_sign_ins_total\\{[^}]*outcome="${limit}"[^}]*\\} [1-9]`));
  });
});
