import { SpanKind, trace, type Counter, type Tracer } from '@opentelemetry/api';
import {
  CONNECTOR_CAPABILITIES,
  connectMcp,
  explainConnectFailure,
  McpClientError,
  McpClientErrorCode,
  resourceMetadataUrl,
  type EraVerdict,
  type McpConnection,
} from '@mcpx/mcp-client';
import { budgetedFetch, ResponseBound } from '@mcpx/outbound';
import { McpAttributes, traceCarrier, withSpan } from '@mcpx/telemetry';
import type { McpServerRecord } from '../catalog/mcp-servers.repository.js';
import { listHints, sanitizeTools, screenTools } from '../catalog/remote-tools.js';
import { CredentialError } from '../shared/credential-error.js';
import { discoveryErrorCode, tracedRequests } from './discovery-telemetry.js';
import {
  DISCOVERY_LIMITS,
  wantsOAuth,
  type DiscoveryDeps,
  type DiscoveryTarget,
  type ProbeOutcome,
} from './discovery-types.js';
import { authContextOf } from './era-verdicts.js';
import type { VerdictStore } from './verdict-store.js';

/** How long after a discovery's deadline its fetch's own deadline cuts what is still open. */
const FETCH_DEADLINE_GRACE_MS = 1_000;

export interface ProbeDeps extends Pick<DiscoveryDeps, 'fetch' | 'oauthRenew'> {
  tracer: Tracer;
  verdicts: VerdictStore;
  /** Bodies cut at a bound of the whole discovery (`mcpx_discovery_bound_cuts_total`). */
  cuts: Counter;
  /** One discovery's total deadline from connect to last page (0: none). */
  deadlineMs: () => number;
}

/** A connection open for listing, with what it was opened on. */
interface Opened {
  conn: McpConnection;
  authContext: string;
  prior: EraVerdict | undefined;
}

/** One exchange's deadline, and the outcome that names it once passed. */
interface Deadline {
  signal: AbortSignal | undefined;
  passed: () => ProbeOutcome;
}

/**
 * One discovery's exchange with a server: the connect (with a stored verdict when there is one,
 * renewing a refused credential once) and the listing of every page, under one byte budget and
 * one deadline. Never throws for what the server did: that is the outcome.
 */
export class DiscoveryProbe {
  /** The `resource_metadata` URL of each server's last OAuth challenge (server id → URL), for the OAuth step. */
  readonly challenges = new Map<string, URL>();

  constructor(private readonly deps: ProbeDeps) {}

  /**
   * Its fetch carries one byte budget ({@link DISCOVERY_LIMITS}.maxTotalBytes) and the discovery's
   * total deadline over every request and body, so a server that answers page after page within
   * each body's bound still stops; the status names the bound that was hit.
   */
  async run(server: McpServerRecord, target: DiscoveryTarget): Promise<ProbeOutcome> {
    const deadlineMs = this.deps.deadlineMs();
    const budgeted =
      this.deps.fetch &&
      budgetedFetch(this.deps.fetch, {
        maxTotalBytes: DISCOVERY_LIMITS.maxTotalBytes,
        // A moment after the discovery's own deadline (probeWith's): the discovery sees it first
        // and reports it as its deadline (code `deadline`, the setting named); this one cuts a
        // body that did not stop at that signal. Before, this timer fired first and a deadline
        // was a transport error.
        ...(deadlineMs > 0 ? { deadlineMs: deadlineMs + FETCH_DEADLINE_GRACE_MS } : {}),
        onCut: (err) => {
          this.deps.cuts.add(1, { bound: err.details.bound.name, kind: target.kind });
          trace.getActiveSpan()?.addEvent('discovery.bound_cut', {
            'mcpx.bound': err.details.bound.name,
            'mcpx.bound.limit': err.details.bound.limit,
          });
        },
      });
    // Each JSON-RPC request of the discovery (era probe, every page) its own span.
    const traced =
      budgeted &&
      tracedRequests(this.deps.tracer, budgeted, {
        [McpAttributes.server]: server.name,
        'mcpx.server_kind': target.kind,
      });
    try {
      return await this.probeWith(server, target, traced);
    } finally {
      budgeted?.end();
    }
  }

  private async probeWith(
    server: McpServerRecord,
    target: DiscoveryTarget,
    fetch: typeof globalThis.fetch | undefined,
    withoutPrior = false,
  ): Promise<ProbeOutcome> {
    const deadlineMs = this.deps.deadlineMs();
    // One total deadline from connect to the last page (a server that answers slowly page after page included).
    const signal = deadlineMs > 0 ? AbortSignal.timeout(deadlineMs) : undefined;
    const deadline: Deadline = {
      signal,
      passed: () => ({
        error: `the discovery passed its total deadline of ${deadlineMs} ms (bound ${ResponseBound.deadline}, DISCOVERY_DEADLINE_MS)`,
        code: 'deadline',
      }),
    };
    let headers: Record<string, string>;
    try {
      headers = await target.headers(server);
    } catch (err) {
      if (err instanceof CredentialError)
        return { error: err.message, code: 'credential', authRequired: err.authRequired };
      throw err;
    }
    const opened = await this.connect(server, target, headers, fetch, deadline, withoutPrior);
    if (!('conn' in opened)) return opened;
    const listed = await this.list(server, target, opened, deadline, withoutPrior);
    // Undefined only when the listing was refused for the credential on a connection from a prior.
    return listed ?? this.probeWith(server, target, fetch, true);
  }

  /** The connect, renewing a refused credential once: the connection, or the outcome that ends the discovery. */
  private async connect(
    server: McpServerRecord,
    target: DiscoveryTarget,
    sent: Record<string, string>,
    fetch: typeof globalThis.fetch | undefined,
    deadline: Deadline,
    withoutPrior: boolean,
  ): Promise<Opened | ProbeOutcome> {
    let headers = sent;
    // Set once an OAuth client credentials token was renewed for this probe.
    let renewedClientToken = false;
    // Set once a connection the server dropped was dialled again.
    let redialed = false;
    for (let renewed = false; ;) {
      // The verdict is looked up under the headers actually sent: a renewed credential is another auth context.
      const authContext = authContextOf(server.config.url, headers);
      const prior = withoutPrior ? undefined : await this.deps.verdicts.prior(server, authContext);
      try {
        const conn = await this.connectSpan(server, target, prior, renewed, () =>
          connectMcp({
            url: server.config.url,
            ...(server.config.transport ? { transport: server.config.transport } : {}),
            headers,
            connectTimeoutMs: DISCOVERY_LIMITS.connectTimeoutMs,
            // What the proxy declares too: a server lists the same tools to both (CONNECTOR_CAPABILITIES).
            capabilities: CONNECTOR_CAPABILITIES,
            ...(fetch ? { fetch } : {}),
            ...(prior !== undefined ? { prior } : {}),
            ...(deadline.signal !== undefined ? { signal: deadline.signal } : {}),
            // A modern request carries the discovery's trace context in its _meta.
            traceCarrier,
          }),
        );
        return { conn, authContext, prior };
      } catch (err) {
        if (deadline.signal?.aborted === true) return deadline.passed();
        // A server that took the connection and closed it before answering (a kept-alive socket it
        // closed as it was reused, a restart): the handshake is only read, so it is tried once more.
        if (!redialed && droppedByServer(err)) {
          redialed = true;
          continue;
        }
        const e = err as { code?: string; message?: string; wwwAuthenticate?: string };
        const challenge = e.code === 'unauthorized' ? resourceMetadataUrl(e.wwwAuthenticate) : undefined;
        // A refused credential that can be renewed (a vendor token, a client credentials token): renew it, try once more.
        let next: Record<string, string> | null = null;
        try {
          if (e.code === 'unauthorized' && !renewed)
            next = target.renew
              ? await target.renew(server, headers)
              : ((await this.deps.oauthRenew?.(server, headers, challenge)) ?? null);
        } catch (renewErr) {
          if (renewErr instanceof CredentialError)
            return { error: renewErr.message, code: 'credential', authRequired: renewErr.authRequired };
          throw renewErr;
        }
        if (next !== null) {
          headers = next;
          renewed = true;
          renewedClientToken = target.renew === undefined;
          continue;
        }
        return this.refused(server, target, err, challenge, renewedClientToken);
      }
    }
  }

  /** A connect that failed for good: the outcome, and the OAuth challenge kept for the OAuth step. */
  private refused(
    server: McpServerRecord,
    target: DiscoveryTarget,
    err: unknown,
    challenge: URL | undefined,
    renewedClientToken: boolean,
  ): ProbeOutcome {
    const e = err as { code?: string; message?: string; wwwAuthenticate?: string };
    if (renewedClientToken && e.code === 'unauthorized')
      return {
        error: `the server refuses the access token obtained with its OAuth client credentials (${e.message ?? 'unauthorized'})`,
        code: 'unauthorized',
      };
    if (challenge !== undefined) {
      this.challenges.set(server.id, challenge);
      if (this.challenges.size > 10_000) this.challenges.delete(this.challenges.keys().next().value as string);
    }
    const summary = explainConnectFailure(err, server.config.url, server.config.auth);
    return {
      error: e.message ?? 'connect failed',
      ...(summary !== undefined ? { summary } : {}),
      code: discoveryErrorCode(err),
      authRequired: e.code === 'unauthorized' && (target.renew !== undefined || wantsOAuth(e.wwwAuthenticate)),
    };
  }

  /**
   * Every page of the list (`discovery.list`), screened; the verdict stored after it. Undefined
   * when a connection adopted from a modern prior (no round trip) was refused for its credential:
   * the caller probes again without the prior, where the refusal is renewed or recorded as always.
   */
  private async list(
    server: McpServerRecord,
    target: DiscoveryTarget,
    opened: Opened,
    deadline: Deadline,
    withoutPrior: boolean,
  ): Promise<ProbeOutcome | undefined> {
    const { conn, authContext, prior } = opened;
    try {
      const listed = await withSpan(
        this.deps.tracer,
        'discovery.list',
        {
          [McpAttributes.methodName]: 'tools/list',
          [McpAttributes.server]: server.name,
          'mcpx.server_kind': target.kind,
        },
        async (span) => {
          try {
            const out = await conn.listToolsWithHints({
              maxPages: DISCOVERY_LIMITS.maxPages,
              ...(deadline.signal !== undefined ? { signal: deadline.signal } : {}),
            });
            span.setAttributes({ [McpAttributes.outcome]: 'ok', 'mcpx.tools.listed': out.tools.length });
            return out;
          } catch (err) {
            span.setAttributes({
              [McpAttributes.outcome]: 'error',
              [McpAttributes.errorCode]: deadline.signal?.aborted === true ? 'deadline' : discoveryErrorCode(err),
            });
            throw err;
          }
        },
        { kind: SpanKind.CLIENT },
      );
      const { kept, skipped } = screenTools(sanitizeTools(listed.tools));
      return { tools: kept, transport: conn.transport, skipped, verdict: conn.verdict, hints: listHints(listed) };
    } catch (err) {
      if (deadline.signal?.aborted === true) return deadline.passed();
      const refusedFromPrior =
        (err as { code?: string }).code === 'unauthorized' && prior !== undefined && !withoutPrior;
      if (!refusedFromPrior)
        return { error: (err as Error).message ?? 'tools/list failed', code: discoveryErrorCode(err) };
      return undefined;
    } finally {
      // After the listing: a modern prior is adopted with no round trip, so a stale one is found
      // out (and re-probed) by the first request, not by the connect.
      const how = await this.deps.verdicts.store(server, authContext, conn, prior, target.kind);
      trace
        .getActiveSpan()
        ?.setAttributes({ 'mcpx.era': conn.era, 'mcp.protocol.version': conn.protocolVersion, 'mcpx.verdict': how });
      await conn.close().catch(() => undefined);
    }
  }

  /**
   * The connect (`discovery.connect`): a modern server's `server/discover` or a legacy
   * `initialize`, an era probe when no verdict is stored, none when a stored modern verdict is
   * adopted. Outcome and error code on the span; never a header or the URL's secrets.
   */
  private async connectSpan(
    server: McpServerRecord,
    target: DiscoveryTarget,
    prior: EraVerdict | undefined,
    renewed: boolean,
    connect: () => Promise<McpConnection>,
  ): Promise<McpConnection> {
    return withSpan(
      this.deps.tracer,
      'discovery.connect',
      {
        [McpAttributes.server]: server.name,
        'mcpx.server_kind': target.kind,
        'mcpx.prior': prior !== undefined,
        'mcpx.renewed': renewed,
        ...(prior !== undefined
          ? { [McpAttributes.methodName]: prior.era === 'modern' ? 'server/discover' : 'initialize' }
          : {}),
      },
      async (span) => {
        try {
          const conn = await connect();
          span.setAttributes({
            [McpAttributes.outcome]: 'ok',
            [McpAttributes.methodName]: conn.era === 'modern' ? 'server/discover' : 'initialize',
            'mcpx.era': conn.era,
            'mcp.protocol.version': conn.protocolVersion,
            'mcpx.era_probe': prior === undefined || conn.reprobed,
          });
          return conn;
        } catch (err) {
          span.setAttributes({ [McpAttributes.outcome]: 'error', [McpAttributes.errorCode]: discoveryErrorCode(err) });
          throw err;
        }
      },
      { kind: SpanKind.CLIENT },
    );
  }
}

/** Socket errors of a connection the server closed or reset before its answer came. */
const DROPPED = new Set(['UND_ERR_SOCKET', 'ECONNRESET', 'EPIPE']);

/** Whether a connect failed because the server dropped the connection (no answer was read; not a refusal, a timeout or a name). */
function droppedByServer(err: unknown): boolean {
  if (
    !(err instanceof McpClientError) ||
    (err.code !== McpClientErrorCode.ConnectFailed && err.code !== McpClientErrorCode.TransportError)
  )
    return false;
  let current: unknown = err.cause;
  for (let depth = 0; depth < 6 && current instanceof Error; depth += 1) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && DROPPED.has(code)) return true;
    current = current.cause;
  }
  return false;
}
