import { withSpan, type Counter, type Meter, type Tracer } from '@mcpx/telemetry';
import type { McpServerRecord } from '../../catalog/mcp-servers.repository.js';
import { usesClientCredentials } from './client-credentials-tokens.js';
import { mixUpError } from './mix-up-errors.js';

/** What an exchange was: a start or renewal (`ensure`), a refresh, a code exchange, or an authorization server's error response. */
export type OAuthExchangeOp = 'ensure' | 'refresh' | 'code_exchange' | 'error_response';

/** How the registry's OAuth exchanges are seen: a span each and the `mcpx_oauth_exchanges_total` counter. */
export class OAuthExchanges {
  readonly #tracer: Tracer | undefined;
  readonly #exchanges: Counter | undefined;

  constructor(tracer: Tracer | undefined, meter: Meter | undefined) {
    this.#tracer = tracer;
    this.#exchanges = meter?.createCounter('mcpx_oauth_exchanges_total', {
      description: 'OAuth exchanges of the registry (ensure, refresh, code exchange) by grant and outcome',
    });
  }

  /**
   * Runs one exchange in a span `registry.oauth <op>` and counts it by grant and outcome (the
   * outcome's state; `issuer_mismatch` for a response from another authorization server, else
   * `error`). Nothing secret goes into either: ids, the grant and the state.
   * `error_response` is an authorization the authorization server answered with an error.
   */
  async observed<T extends { state: string }>(
    op: OAuthExchangeOp,
    server: McpServerRecord,
    fn: () => Promise<T>,
  ): Promise<T> {
    const grant = usesClientCredentials(server) ? 'client_credentials' : 'authorization_code';
    const attrs = { 'mcp.account': server.accountId, 'mcp.server': server.name, 'mcpx.oauth.grant': grant };
    const run = async (): Promise<T> => {
      try {
        const out = await fn();
        this.#exchanges?.add(1, { op, grant, outcome: out.state });
        return out;
      } catch (err) {
        this.#exchanges?.add(1, { op, grant, outcome: mixUpError(err) !== undefined ? 'issuer_mismatch' : 'error' });
        throw err;
      }
    };
    if (this.#tracer === undefined) return run();
    return withSpan(this.#tracer, `registry.oauth ${op}`, attrs, async (span) => {
      const out = await run();
      span.setAttribute('mcpx.oauth.outcome', out.state);
      return out;
    });
  }
}
