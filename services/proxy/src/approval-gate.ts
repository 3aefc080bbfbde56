import { ErrorCodes, WireError, type ApprovalRequestedEvent, type ProxyCallRequest } from '@mcpx/contracts';
import { encodeCanonical, sha256Hex, type McpToolDocument } from '@mcpx/domain';
import type { Counter, Meter, Span } from '@opentelemetry/api';
import type { Logger } from '@mcpx/log';
import { spanIds } from '@mcpx/telemetry';
import {
  isRedisUnavailable,
  PendingApprovalsFullError,
  REDIS_RETRY_AFTER_MS,
  type ApprovalRecord,
  type ApprovalStore,
  type ConsumeOutcome,
  type ConsumeReason,
  type PendingCaps,
} from '@mcpx/shared-state';
import { pendingCaps, pendingFullError, pendingStoreDown, type PendingCapsDeps } from './pending-refusals.js';

/** Hex sha-256 of the canonical (dag-cbor) encoding of a call's arguments: key order does not count. */
export function argumentsHash(args: Record<string, unknown>): string {
  let bytes: Uint8Array;
  try {
    bytes = encodeCanonical(args);
  } catch {
    // dag-cbor refuses undefined and non-finite numbers: such arguments cannot be bound.
    throw new WireError(
      ErrorCodes.invalidArguments,
      'arguments: an always_ask call needs arguments with a canonical encoding (no undefined, NaN or Infinity)',
      { field: 'arguments' },
    );
  }
  return sha256Hex(bytes);
}

const REFUSALS: Record<ConsumeReason, string> = {
  unknown: 'there is no such approval',
  expired: 'the approval expired',
  denied: 'the approval was denied',
  used: 'the approval was already used: every call of this tool needs its own',
  pending: 'the approval has not been decided yet',
  mismatch: 'the approval was given for another run, tool or arguments',
};

/** Its caps (`PendingCapsDeps`) default to `config.quotas.pendingApprovals*`. */
export interface ApprovalGateDeps extends PendingCapsDeps {
  store: ApprovalStore;
  /** Publishes the approval-requested event (a core-NATS notification, `Bus.notify`). */
  notify: (subject: string, event: ApprovalRequestedEvent) => void;
  subject: (account: string) => string;
  /** Where refusals are counted (`mcpx_quota_rejections_total{kind}`). */
  meter?: Meter;
  /** Where each use of an approval is recorded (the audit log holds the owner's decision). */
  log?: Pick<Logger, 'info'>;
}

/**
 * The human in the loop of `always_ask` tools (docs/call.md#permissions): such a call never reaches the server
 * on its own. Without an approval it records one and answers `approval_required` with its id;
 * with one it consumes it — once, and only for the run, tool and arguments it was given for.
 * An approval is per call, never per run: every call stops for a human, even in an approved run.
 */
export class ApprovalGate {
  private readonly caps: Required<PendingCaps>;
  private readonly rejections: Counter | undefined;

  constructor(private readonly deps: ApprovalGateDeps) {
    this.caps = pendingCaps(deps, 'approval');
    this.rejections = deps.meter?.createCounter('mcpx_quota_rejections_total', {
      description: 'Requests refused by a quota or rate limit, by kind',
    });
  }

  /**
   * Records the approval of a call unless the agent, or its account across all its agents, has its
   * quota waiting: then the call fails, the server is not called and nothing is recorded. The
   * store counts both and records in one step, so racing calls of one agent, or of many agents of
   * one account, never pass a cap.
   */
  private async createWithin(input: Parameters<ApprovalStore['create']>[0], tool: string): Promise<ApprovalRecord> {
    let full: PendingApprovalsFullError;
    try {
      return await this.deps.store.create(input, this.caps);
    } catch (err) {
      if (!(err instanceof PendingApprovalsFullError)) throw pendingStoreDown(err, 'approval');
      full = err;
    }
    const error = pendingFullError('approval', full, tool);
    this.rejections?.add(1, { kind: String(error.details.limit) });
    throw error;
  }

  /**
   * Returns when the call may go ahead; throws `approval_required` or `approval_refused`. A call
   * that names its approval (`approvalId`) uses that one; a call re-sent without it uses the
   * approval asked for this very call (same agent, run, tool and arguments' digest): approved,
   * it runs once; still pending, it waits on the same approval (no new one); denied, it is
   * refused until the approval's deadline. Otherwise (never asked, used, expired) a new approval
   * is asked for. `span` (the call's approval step) is told which approval was used or asked.
   */
  async admit(req: ProxyCallRequest, doc: McpToolDocument, span?: Span): Promise<void> {
    const argsHash = argumentsHash(req.arguments);
    const binding = { agent: req.agent, run: req.run, tool: req.tool, argsHash };
    if (req.approvalId !== undefined) {
      const out = await this.deps.store.consume(req.account, req.approvalId, binding).catch((err: unknown) => {
        throw approvalsDown(err);
      });
      const refusal = consumeRefusal(out, req.approvalId, doc);
      if (refusal !== undefined) throw refusal;
      this.used(req, doc, req.approvalId, 'id', span);
      return;
    }
    const claim = await this.deps.store.claimByCall(req.account, binding).catch((err: unknown) => {
      throw approvalsDown(err);
    });
    if (claim.ok) {
      this.used(req, doc, claim.record.id, 'call', span);
      return;
    }
    if (claim.reason === 'pending') {
      span?.setAttribute('mcpx.approval.id', claim.record.id);
      throw approvalRequiredError(doc, claim.record.id, new Date(claim.record.expiresAt).toISOString());
    }
    if (claim.reason === 'denied') {
      span?.setAttribute('mcpx.approval.id', claim.record.id);
      throw new WireError(
        ErrorCodes.approvalRefused,
        `${doc.name}: ${REFUSALS.denied}; this call is refused until ${new Date(claim.record.expiresAt).toISOString()}`,
        {
          approvalId: claim.record.id,
          reason: 'denied',
          tool: doc.name,
        },
      );
    }
    const record = await this.createWithin(
      { ...binding, account: req.account, server: doc.server, remoteName: doc.remoteName, arguments: req.arguments },
      doc.name,
    );
    const event: ApprovalRequestedEvent = {
      account: req.account,
      approvalId: record.id,
      ...binding,
      server: doc.server,
      remoteName: doc.remoteName,
      expiresAt: new Date(record.expiresAt).toISOString(),
    };
    this.deps.notify(this.deps.subject(req.account), event);
    span?.setAttribute('mcpx.approval.id', record.id);
    throw approvalRequiredError(doc, record.id, event.expiresAt);
  }

  /** The use of an approval, recorded: on the call's span and in the log (who, which call, how it was matched). */
  private used(
    req: ProxyCallRequest,
    doc: McpToolDocument,
    approvalId: string,
    matched: 'id' | 'call',
    span: Span | undefined,
  ): void {
    span?.setAttribute('mcpx.approval.id', approvalId);
    span?.setAttribute('mcpx.approval.matched', matched);
    this.deps.log?.info('approved tool call admitted', {
      account: req.account,
      agent: req.agent,
      run: req.run,
      tool: doc.name,
      approval: approvalId,
      matched,
      ...spanIds(span),
    });
  }
}

/**
 * A Redis that cannot be read or written while an approval is looked up or used: the typed
 * `unavailable` (retry after a moment; the call did not run, nothing was used). Anything else as it is.
 */
function approvalsDown(err: unknown): unknown {
  if (err instanceof WireError || !isRedisUnavailable(err)) return err;
  return new WireError(
    ErrorCodes.unavailable,
    'redis is unavailable: the approval could not be checked, and the call did not run',
    { dependency: 'redis', retryAfterMs: REDIS_RETRY_AFTER_MS },
  );
}

/**
 * The refusal of a call that waits for a human: the approval's id and deadline. The same call
 * re-sent once it is approved runs, with or without the id; re-sent before, it gets the same
 * refusal (the same words too: the endpoint's two serving paths answer alike).
 */
function approvalRequiredError(
  doc: Pick<McpToolDocument, 'name' | 'server'>,
  approvalId: string,
  expiresAt: string,
): WireError {
  return new WireError(
    ErrorCodes.approvalRequired,
    `${doc.name} needs a human's approval before it runs; re-send the same call (same arguments) once it is approved`,
    {
      approvalId,
      tool: doc.name,
      server: doc.server,
      expiresAt,
    },
  );
}

/**
 * What consuming a call's approval means for the call: undefined, it goes ahead (the approval was
 * given for this run, tool and arguments and is now used); `approval_required` while a human has
 * not decided (the call can be re-sent with the same approval); `approval_refused`, with the
 * reason, for one denied, expired, used, unknown or given for another call.
 */
export function consumeRefusal(
  out: ConsumeOutcome,
  approvalId: string,
  doc: Pick<McpToolDocument, 'name' | 'server'>,
): WireError | undefined {
  if (out.ok) return undefined;
  if (out.reason === 'pending')
    return new WireError(ErrorCodes.approvalRequired, `${doc.name} is still waiting for a human's approval`, {
      approvalId,
      tool: doc.name,
      server: doc.server,
    });
  return new WireError(ErrorCodes.approvalRefused, `${doc.name}: ${REFUSALS[out.reason]}`, {
    approvalId,
    reason: out.reason,
    tool: doc.name,
  });
}
