/**
 * The client side of the official MCP conformance scenarios, driven through the project's own
 * client code: `connectMcp` from @mcpx/mcp-client and the registry's OAuth provider
 * (`RegistryOAuthProvider`) over an in-memory store instead of Postgres. The conformance runner
 * starts it as `tsx test/conformance/client-harness.ts <server url>` with the scenario's name in
 * `MCP_CONFORMANCE_SCENARIO` (and, for some, a JSON context in `MCP_CONFORMANCE_CONTEXT`).
 *
 * The tool calls go through the connection's own `tools/call` path (the one the proxy uses), a
 * legacy server's `elicitation/create` through the connection's `onElicitation` hook.
 *
 * The "browser" of an authorization is a fetch of the authorization URL without following its
 * redirect: the scenarios' authorization servers approve at once and redirect with the code.
 * The `auth/client-credentials-*` scenarios give a machine client (a secret, or a PKCS#8 key and
 * its algorithm): it becomes `config.oauth` with `grant: 'client_credentials'`, validated and
 * turned into sealed state as the registry does, and the registry's client credentials provider
 * asks the token endpoint directly (nobody authorizes).
 */
import {
  McpClientError,
  boundedOAuthFetch,
  connectMcp,
  resourceMetadataUrl,
  runOAuth,
  type ElicitationHandler,
  type McpConnection,
  type OAuthTokens,
} from '@mcpx/mcp-client';
import {
  RegistryOAuthProvider,
  preRegisteredState,
  readAuthorizationResponse,
  requestClientCredentialsToken,
  validatePreRegisteredClient,
  type OAuthClientState,
  type OAuthStateStore,
} from '@mcpx/registry/oauth';
import { callListed, callValidTools, callWithInputRounds, type ToolCall } from './scenario-calls.js';

const REDIRECT_URL = 'http://localhost:3000/callback';
/** Used as the client id where the authorization server supports client ID metadata documents. */
const CLIENT_METADATA_URL = 'https://conformance-test.local/client-metadata.json';
/** Authorizations per run: a server that keeps refusing (scope-retry-limit) is not chased forever. */
const MAX_AUTHORIZATIONS = 3;

/** The sealed store's shape, in memory (one process, one server). */
class MemoryStore implements OAuthStateStore {
  private state: OAuthClientState = {};
  private held: { tokens: OAuthTokens; expiresAt: Date | null; url: string } | undefined;

  async client(): Promise<OAuthClientState> {
    return { ...this.state };
  }

  async updateClient(_account: string, _serverId: string, patch: Partial<OAuthClientState>): Promise<void> {
    const next = { ...this.state, ...patch };
    for (const key of Object.keys(patch) as Array<keyof OAuthClientState>)
      if (patch[key] === undefined) delete next[key];
    this.state = next;
  }

  async tokens(
    _account: string,
    _serverId: string,
    serverUrl: string,
  ): Promise<{ tokens: OAuthTokens; expiresAt: Date | null } | undefined> {
    return this.held?.url === serverUrl ? { tokens: this.held.tokens, expiresAt: this.held.expiresAt } : undefined;
  }

  async saveTokens(
    _account: string,
    _serverId: string,
    tokens: OAuthTokens | undefined,
    serverUrl: string | null,
  ): Promise<void> {
    this.held =
      tokens === undefined || serverUrl === null
        ? undefined
        : {
            tokens,
            expiresAt: tokens.expires_in === undefined ? null : new Date(Date.now() + tokens.expires_in * 1000),
            url: serverUrl,
          };
  }

  async setPendingState(): Promise<void> {}
}

interface Context {
  name?: string;
  client_id?: string;
  client_secret?: string;
  /** `auth/client-credentials-jwt`: the client's PEM PKCS#8 key and the algorithm it signs with. */
  private_key_pem?: string;
  signing_algorithm?: string;
  /** `http-custom-headers`: the calls to make, with their arguments. */
  toolCalls?: ToolCall[];
}

function log(msg: string): void {
  process.stderr.write(`[harness] ${msg}\n`);
}

/** The `scope` parameter of a `WWW-Authenticate: Bearer …` challenge. */
function challengeScope(header: string | undefined): string | undefined {
  return header?.match(/scope\s*=\s*"([^"]*)"/i)?.[1] ?? header?.match(/scope\s*=\s*([^\s,]+)/i)?.[1];
}

/** The scopes of `a` and then those of `b` not in it (SEP-2350: a step-up keeps what was granted). */
function scopeUnion(a: string | undefined, b: string | undefined): string | undefined {
  const all = [...new Set([...(a ?? '').split(' '), ...(b ?? '').split(' ')].filter((t) => t !== ''))];
  return all.length === 0 ? undefined : all.join(' ');
}

/** An elicitation answered "accept" with nothing typed in: what the form offers (its defaults) is the answer. */
const acceptAsOffered: ElicitationHandler = async () => ({ action: 'accept', content: {} });

async function main(): Promise<void> {
  const serverUrl = process.argv.at(-1);
  if (serverUrl === undefined || !/^https?:\/\//.test(serverUrl))
    throw new Error('usage: client-harness.ts <server url>');
  const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? '';
  const context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT ?? '{}') as Context;
  const store = new MemoryStore();
  const machine = scenario.startsWith('auth/client-credentials-');
  if (context.client_id !== undefined) {
    // A pre-registered client, as `config.oauth` gives one to the registry.
    const client = validatePreRegisteredClient(
      {
        clientId: context.client_id,
        ...(context.client_secret ? { clientSecret: context.client_secret } : {}),
        ...(machine ? { grant: 'client_credentials' } : {}),
        ...(machine && context.private_key_pem
          ? { privateKey: context.private_key_pem, keyAlg: context.signing_algorithm }
          : {}),
      },
      'oauth',
    );
    if (client !== undefined) await store.updateClient('', '', preRegisteredState(client));
  }
  // One provider per leg, as the registry builds them: a flow that may start an authorization
  // discovers the authorization server afresh (the server may have moved to another one), the
  // callback leg redeems the code where the authorization was started.
  const providerFor = (leg: 'start' | 'callback'): RegistryOAuthProvider =>
    new RegistryOAuthProvider(store, {
      account: 'conformance',
      serverId: 'conformance',
      serverUrl,
      redirectUrl: REDIRECT_URL,
      ...(context.client_id === undefined ? { clientMetadataUrl: CLIENT_METADATA_URL } : {}),
      ...(leg === 'start' ? { rediscover: true } : {}),
    });
  /** Whatever reads the current token: the stored one, exactly as the registry's provider hands it out. */
  const provider = providerFor('callback');
  const oauthFetch = boundedOAuthFetch();
  let authorizations = 0;
  // The last challenge of a 401 or 403 (a 403 `insufficient_scope` asks for more scope: step-up).
  let lastChallenge: string | undefined;
  // Its status: a call refused with 403 comes back from the client without one.
  let lastRefusalStatus: number | undefined;
  const mcpFetch: typeof fetch = async (input, init) => {
    const res = await fetch(input, init);
    if (res.status === 401 || res.status === 403) {
      lastChallenge = res.headers.get('www-authenticate') ?? lastChallenge;
      lastRefusalStatus = res.status;
    }
    return res;
  };

  // The scope asked for so far: a step-up (403 insufficient_scope) asks for it and the new one (SEP-2350).
  let requestedScope: string | undefined;

  const authorize = async (challenge: string | undefined, status: number | undefined): Promise<void> => {
    if (++authorizations > MAX_AUTHORIZATIONS) throw new Error('the server keeps refusing our authorization');
    const challenged = challengeScope(challenge);
    const stepUp = status === 403 && /insufficient_scope/i.test(challenge ?? '');
    const scope = stepUp ? scopeUnion(requestedScope, challenged) : challenged;
    if (scope !== undefined) requestedScope = scope;
    const metadataUrl = resourceMetadataUrl(challenge);
    const options = {
      serverUrl,
      ...(metadataUrl ? { resourceMetadataUrl: metadataUrl } : {}),
      ...(scope ? { scope } : {}),
      // A step-up needs a new grant: refreshing would only bring back the scope the token has.
      ...(stepUp ? { forceReauthorization: true } : {}),
      fetchFn: oauthFetch,
    };
    if (machine) {
      await requestClientCredentialsToken(
        store,
        { account: 'conformance', serverId: 'conformance', serverUrl },
        { fetchFn: oauthFetch, ...(metadataUrl ? { resourceMetadataUrl: metadataUrl } : {}) },
      );
      log(`client credentials token (${authorizations})`);
      return;
    }
    const start = providerFor('start');
    let result = await runOAuth(start, options);
    await start.persistDiscovery();
    if (result === 'REDIRECT') {
      const url = start.authorizationUrl;
      if (url === undefined) throw new Error('authorization started without a URL');
      // The browser: the scenarios' authorization servers approve at once and redirect back.
      const res = await fetch(url, { redirect: 'manual' });
      const location = res.headers.get('location');
      const response = location ? readAuthorizationResponse(new URL(location).searchParams) : undefined;
      if (response?.code === undefined)
        throw new Error(`the authorization server answered ${res.status} without a code`);
      const callback = providerFor('callback');
      // RFC 9207: the response's `iss` goes with the code; the SDK checks it before redeeming.
      result = await runOAuth(callback, {
        ...options,
        authorizationCode: response.code,
        ...(response.iss !== undefined ? { iss: response.iss } : {}),
      });
      await callback.persistDiscovery();
    }
    if (result !== 'AUTHORIZED') throw new Error(`authorization ended ${result}`);
    log(`authorized (${authorizations})`);
  };

  /** Runs `fn` on a connection carrying the current token; a 401/403 with a challenge authorizes and retries. */
  const withConnection = async <T>(fn: (conn: McpConnection) => Promise<T>): Promise<T> => {
    let resets = 0;
    for (;;) {
      const token = (await provider.tokens())?.access_token;
      let conn: McpConnection | undefined;
      try {
        lastChallenge = undefined;
        lastRefusalStatus = undefined;
        conn = await connectMcp({
          url: serverUrl,
          headers: token ? { authorization: `Bearer ${token}` } : {},
          clientInfo: { name: 'mcpx-conformance', version: '0.1.0' },
          fetch: mcpFetch,
          // A legacy server's elicitation/create: the "user" accepts the form as offered, and the
          // connection fills the fields it leaves out with the schema's defaults (SEP-1034).
          ...(scenario.startsWith('elicitation-') ? { onElicitation: acceptAsOffered } : {}),
        });
        return await fn(conn);
      } catch (err) {
        const e = err as McpClientError & {
          status?: number;
          wwwAuthenticate?: string;
          details?: { status?: number; wwwAuthenticate?: string };
        };
        const status = e.status ?? e.details?.status ?? lastRefusalStatus;
        const challenge = e.wwwAuthenticate ?? e.details?.wwwAuthenticate ?? lastChallenge;
        const refused =
          err instanceof McpClientError && (e.code === 'unauthorized' || status === 403) && challenge !== undefined;
        // A connect whose socket was reset (a keep-alive socket the scenario server closed while a
        // loaded machine left it idle) is tried again: a connect is discovery or a handshake, safe
        // to repeat, and nothing was called yet.
        if (
          !refused &&
          conn === undefined &&
          e.code === 'connect_failed' &&
          /ECONNRESET|socket hang up|other side closed|EPIPE/.test(e.message) &&
          ++resets <= 2
        ) {
          log(`connect reset, again (${resets}): ${e.message}`);
          continue;
        }
        if (!refused) {
          log(
            `not an auth refusal: ${JSON.stringify({ code: e.code, status, details: e.details, challenge, last: lastChallenge })}`,
          );
          throw err;
        }
        log(`refused (${status ?? e.code}): ${challenge}`);
        await authorize(challenge, status);
      } finally {
        await conn?.close().catch(() => undefined);
      }
    }
  };

  await withConnection(async (conn) => {
    const tools = await conn.listTools();
    log(`${tools.length} tools: ${tools.map((t) => t.name).join(', ')}`);
    if (context.toolCalls !== undefined) {
      await callListed(conn, context.toolCalls, log);
    } else if (scenario === 'http-invalid-tool-headers') {
      await callValidTools(conn, log);
    } else if (scenario === 'sep-2322-client-request-state') {
      await callWithInputRounds(conn, log);
    } else if (tools.some((t) => t.name === 'add_numbers')) {
      const r = await conn.callTool({ name: 'add_numbers', arguments: { a: 5, b: 3 } });
      log(`add_numbers → ${JSON.stringify(r.content)}`);
    } else if (scenario.startsWith('auth/') && tools[0] !== undefined) {
      await conn.callTool({ name: tools[0].name, arguments: {} });
    } else if (scenario.startsWith('elicitation-') && tools[0] !== undefined) {
      const r = await conn.callTool({ name: tools[0].name, arguments: {} });
      log(`${tools[0].name} → ${JSON.stringify(r.content)}`);
    } else if (scenario === 'sse-retry' && tools[0] !== undefined) {
      await conn.callTool({ name: tools[0].name, arguments: {} }, { timeoutMs: 10_000 });
    }
    // Stay connected a moment: scenarios watch the GET stream's reconnection.
    if (scenario === 'sse-retry') await new Promise((r) => setTimeout(r, 2_000));
  });
}

/** Whether a failure is a socket the other side reset or closed mid-exchange (not an answer of the scenario). */
function isSocketReset(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 6; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (code === 'ECONNRESET' || code === 'EPIPE' || code === 'UND_ERR_SOCKET') return true;
    if (/ECONNRESET|socket hang up|other side closed|EPIPE/.test(e.message)) return true;
  }
  return false;
}

/**
 * The scenario, once more (at most twice) when a socket was reset under it: the scenarios of a
 * revision run in parallel, and on a loaded machine their servers drop idle keep-alive sockets
 * mid-flow (an OAuth fetch then fails with "fetch failed" before any check could be made). Only
 * such a failure is repeated, so a run that passes is never changed by it.
 */
async function mainWithRetries(): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await main();
      return;
    } catch (err) {
      if (attempt >= 2 || !isSocketReset(err)) throw err;
      log(`a socket was reset, the scenario once more: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
}

mainWithRetries().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`[harness] failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
