import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { decodePayload, type ApprovalDecidedEvent } from '@mcpx/contracts';

/** Decisions on one approval, as `mcp.approvals.decided.<acct>` announces them (at most once each). */
export interface DecisionWatch {
  /** Resolves at the next decision on the approval, or after `ms` (the event may be lost: then re-ask). */
  next(ms: number): Promise<void>;
  close(): void;
}

export function watchDecisions(nc: NatsConnection, subject: string, approvalId: string): DecisionWatch {
  let decided = false;
  let wake: (() => void) | undefined;
  const sub: Subscription = nc.subscribe(subject, {
    callback: (err, msg) => {
      if (err) return;
      try {
        if (decodePayload<ApprovalDecidedEvent>(msg.data).approvalId !== approvalId) return;
      } catch {
        return;
      }
      decided = true;
      wake?.();
    },
  });
  return {
    next(ms: number): Promise<void> {
      if (decided) {
        decided = false;
        return Promise.resolve();
      }
      return new Promise<void>((resolve) => {
        const done = (): void => {
          clearTimeout(timer);
          wake = undefined;
          decided = false;
          resolve();
        };
        const timer = setTimeout(done, ms);
        wake = done;
      });
    },
    close(): void {
      sub.unsubscribe();
      wake?.();
    },
  };
}
