import { request } from '@mcpx/bus';
import {
  WireError,
  tokenDecisionAuditReplyValue,
  type Subjects,
  type TokenDecisionAudit,
  type TokenDecisionAuditReply,
} from '@mcpx/contracts';
import type { Logger } from '@mcpx/log';
import type { NatsConnection } from '@nats-io/transport-node';

export interface DecisionAuditDeps {
  nc: NatsConnection;
  subjects: Subjects;
  log: Logger;
  /** Requests sent at most (default 3). */
  attempts?: number;
  /** How long each waits for the registry (default 2 s). */
  timeoutMs?: number;
  /** The pause before the second request, doubled before each next one (default 250 ms). */
  backoffMs?: number;
}

/**
 * The audit entry of a decision a token holder took here, written by its owner: the registry,
 * asked on `registry.approvals.token-decided` with the account and the approval only (it words the
 * entry from the approval store). The request is idempotent by the approval, so one that got no
 * answer (the registry slow, restarting, or not there) is sent again, a few times with backoff;
 * a refusal (`not_found`, `conflict`: nothing to audit) is not. When no request gets an answer the
 * decision still stands (it is in the approval store, and the call goes on): the entry is missing,
 * and the error log names the approval, so an operator can see which entry the log lacks.
 */
export class DecisionAudit {
  constructor(private readonly deps: DecisionAuditDeps) {}

  /** Asks the registry to audit the decision; what it answered, or undefined when it did not (logged). */
  async record(account: string, approvalId: string): Promise<TokenDecisionAuditReply | undefined> {
    const { nc, subjects, log } = this.deps;
    const attempts = this.deps.attempts ?? 3;
    let pause = this.deps.backoffMs ?? 250;
    const req: TokenDecisionAudit = { account, approvalId };
    for (let attempt = 1; ; attempt++) {
      try {
        return await request(
          nc,
          subjects.registryTokenDecisionAudit,
          req,
          tokenDecisionAuditReplyValue,
          this.deps.timeoutMs ?? 2_000,
        );
      } catch (err) {
        // No answer (a NATS timeout, no responders) or a fault the registry says may pass: again.
        const again = !(err instanceof WireError) || err.retryable;
        if (!again || attempt >= attempts) {
          log.error('audit entry of a token holder decision not written', {
            err: err as Error,
            account,
            approval: approvalId,
            attempts: attempt,
          });
          return undefined;
        }
        await new Promise((r) => setTimeout(r, pause));
        pause *= 2;
      }
    }
  }
}
