import type { Counter } from '@opentelemetry/api';
import type { Logger } from '@mcpx/log';
import type { EraVerdict, McpConnection } from '@mcpx/mcp-client';
import type { McpServerRecord, McpServersRepository } from '../catalog/mcp-servers.repository.js';
import type { VerdictOutcome } from './discovery-types.js';
import { parseEraVerdict } from './era-verdicts.js';

/**
 * The era verdicts discoveries connect on, per server and auth context (the server's rows): read
 * before a connect, stored after one that probed, counted in `mcpx_discovery_era_verdicts_total`.
 * A failed read or write only costs a probe, never the discovery.
 */
export class VerdictStore {
  constructor(
    private readonly servers: Pick<McpServersRepository, 'eraVerdict' | 'saveEraVerdict'>,
    private readonly verdicts: Counter,
    private readonly log: Logger,
  ) {}

  /** The stored verdict for this auth context, if any (a failed read only costs a probe). */
  async prior(server: McpServerRecord, authContext: string): Promise<EraVerdict | undefined> {
    try {
      return parseEraVerdict(await this.servers.eraVerdict(server.accountId, server.name, authContext));
    } catch (err) {
      this.log.warn('era verdict read failed: probing', {
        account: server.accountId,
        server: server.name,
        err: err as Error,
      });
      return undefined;
    }
  }

  /** Stores the verdict a connection probed for (none stored, or the stored one re-probed). */
  async store(
    server: McpServerRecord,
    authContext: string,
    conn: McpConnection,
    prior: EraVerdict | undefined,
    kind: string,
  ): Promise<VerdictOutcome> {
    const outcome: VerdictOutcome = prior === undefined ? 'probed' : conn.reprobed ? 'reprobed' : 'reused';
    this.verdicts.add(1, { outcome, era: conn.era, kind });
    if (outcome === 'reused') return outcome;
    const verdict = parseEraVerdict(conn.verdict);
    if (verdict === undefined) return outcome;
    await this.servers.saveEraVerdict(server.accountId, server.name, authContext, verdict).catch((err: unknown) => {
      this.log.warn('era verdict not stored', { account: server.accountId, server: server.name, err: err as Error });
    });
    return outcome;
  }

  /** A verdict a proxy reported (already probed by it): stored and counted as `observed`. */
  async observed(server: McpServerRecord, authContext: string, verdict: EraVerdict, kind: string): Promise<void> {
    await this.servers.saveEraVerdict(server.accountId, server.name, authContext, verdict);
    this.verdicts.add(1, { outcome: 'observed', era: verdict.era, kind });
  }
}
